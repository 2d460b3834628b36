"""The classroom benchmark's own logic: percentiles, model fingerprints, and the process-tree bookkeeping."""
import json
import subprocess
import sys

import pytest

from bench.classroom_checks import VOCABULARIES, fingerprint, generating_model
from bench.classroom_report import percentile
from bench.server_process import MemorySampler, descendants, process_key


def test_nearest_rank_percentiles():
    values = [float(v) for v in range(1, 21)]  # 1..20, shuffled order must not matter
    shuffled = values[::-1]
    assert (percentile(shuffled, 50), percentile(shuffled, 95), percentile(shuffled, 100)) == (10.0, 19.0, 20.0)
    assert percentile([0.7], 95) == 0.7


def test_generations_are_traced_to_the_smallest_vocabulary_that_holds_them():
    assert VOCABULARIES["first-names"] < VOCABULARIES["shakespeare"]  # the check relies on this
    assert generating_model(["anna\nmaria\n", "joe"]) == "first-names"
    assert generating_model(["anna\nmaria", "Anna, come"]) == "shakespeare"  # a capital and a space
    assert generating_model(["€"]) is None


def test_compare_fingerprint_reads_only_the_generated_text():
    html = ("<div class='te-compare'>" + "".join(
        f"<div class='te-col'><pre class='te-gen'><b>First Citizen:\nBefore</b>{text}</pre></div>"
        for text in ("anna\nmaria", "joe")) + "</div>")
    assert fingerprint("compare", html) == (2, "first-names")  # the prompt's capitals are not the model's


def test_next_token_and_attention_fingerprints_tell_vocabularies_and_head_counts_apart():
    def plot(x):
        return {"plot": json.dumps({"data": [{"x": x}], "layout": {}})}

    assert fingerprint("next_token", [plot(["a", "b"])]) == fingerprint("next_token", [plot(["b", "a"])])
    assert fingerprint("next_token", [plot(["a", "b"])]) != fingerprint("next_token", [plot(["a", "b", "c"])])
    stats = {"data": [["L0·H0"], ["L0·H1"]]}
    assert fingerprint("attention", [None, plot(["0:a"]), None, None, stats]) == (2, ("0:a",))


def test_descendants_and_memory_of_a_process_tree():
    """A child that starts a grandchild: both are found, their memory counted, and a pid is told apart from
    a later process that reuses it by its start time."""
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); " \
           "print('ready', flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        tree = descendants(child.pid)
        assert len(tree) == 1 and process_key(tree[0])[0] == tree[0]
        sampler = MemorySampler(child.pid)
        total = sampler.sample()
        assert sampler.peak == total > 5_000_000 and sampler.peak_processes == 2  # two Python interpreters
        assert set(sampler.seen) == {process_key(child.pid), process_key(tree[0])}
    finally:
        for pid in descendants(child.pid):
            subprocess.run(["kill", str(pid)], check=False)
        child.kill()
        child.wait(timeout=10)
    assert process_key(child.pid) is None


@pytest.mark.parametrize("pid", [0, 2**22 + 1])
def test_a_missing_process_has_no_key(pid):
    assert process_key(pid) is None
