"""The classroom benchmark's own logic: percentiles, model fingerprints, answer digests, models of their own,
trainers' speed, targets, the process-tree bookkeeping, and a tiny class on models of their own."""
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from bench.classroom import (
    NOISE,
    Classroom,
    Tally,
    call_arguments,
    endpoint_defaults,
    parse_args,
    payload_bytes,
    run_alone,
    run_class,
)
from bench.classroom_checks import (
    ANALYSIS,
    ASSETS,
    VOCABULARIES,
    Answers,
    answer_digest,
    fingerprint,
    generating_model,
    reference_fingerprints,
    run_progress,
)
from bench.classroom_models import own_model_zips
from bench.classroom_report import percentile, steps_per_second, summary, trainer_spread
from bench.server_process import MemorySampler, descendants, process_key
from model_core.checkpoints.checkpoint import load_checkpoint, load_checkpoint_zip


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

    # the most likely tokens shown: which shipped vocabulary holds them, whatever their order and weights
    assert fingerprint("next_token", [plot(["a", "⏎"])]) == fingerprint("next_token", [plot(["⏎", "b"])]) == \
        ("first-names",)
    assert fingerprint("next_token", [plot(["a", "␣"])]) == ("shakespeare",)  # a space: not in first names
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


def test_answers_must_stay_the_sessions_own_and_with_own_models_unique():
    shared = Answers()  # sessions on the shipped models: only a session's own answers are compared
    assert shared.problems("a", "attention", "x") == [] and shared.problems("b", "attention", "x") == []
    assert [kind for kind, _ in shared.problems("a", "attention", "y")] == ["crosstalk"]  # a changed answer
    own = Answers({"attention": "shipped"})
    assert own.problems("a", "attention", "x") == [] and own.problems("a", "attention", "x") == []
    found = own.problems("b", "attention", "x")  # another session's answer
    assert [kind for kind, _ in found] == ["crosstalk"] and "same answer as a" in found[0][1]
    for who in ("c", "d"):  # from the shared cache: counted as that, not also as the two sharing an answer
        assert [kind for kind, _ in own.problems(who, "attention", "shipped")] == ["shipped"]


def test_answer_digest_and_payload_size():
    answer = [{"type": "plotly", "plot": '{"data":[]}'}, "Next token: ⏎ 97%"]
    assert answer_digest(answer) == answer_digest(json.loads(json.dumps(answer)))
    assert answer_digest(answer) != answer_digest([answer[0], "Next token: ⏎ 96%"])
    assert payload_bytes("⏎") == len('"⏎"'.encode("utf-8")) == 5  # UTF-8 bytes, not characters


@pytest.fixture(scope="module")
def own_zips(tmp_path_factory):
    """Three models of their own, as the benchmark makes them (seed 1)."""
    return own_model_zips("shakespeare", 3, tmp_path_factory.mktemp("own"), seed=1, noise=NOISE)


@pytest.mark.slow
def test_own_models_are_seeded_loadable_uploads_with_answers_of_their_own(own_zips, tmp_path):
    shipped = load_checkpoint(ASSETS / "shakespeare")
    first, second = own_zips[:2]
    again = own_model_zips("shakespeare", 1, tmp_path, seed=1, noise=NOISE)[0]
    models = [load_checkpoint_zip(p).model for p in (first, second, again)]  # within the app's upload limits
    prompt = torch.tensor([shipped.tokenizer.encode("First Citizen:\nBefore we proceed")])
    with torch.no_grad():
        logits = [m(prompt)[0] for m in (shipped.model, *models)]  # (logits, loss)
    assert all(m.cfg == shipped.model.cfg for m in models)
    assert torch.equal(logits[1], logits[3])  # the same seed gives the same model
    for i, j in ((0, 1), (0, 2), (1, 2)):  # the shipped model and the two own models all answer differently
        assert (logits[i] - logits[j]).abs().max() > 1e-3
    top = [torch.argmax(x[0, -1]) for x in logits[:2]]
    assert top[0] == top[1]  # ... while still much the same model


def test_trainer_progress_steps_per_second_and_spread():
    assert run_progress("**running** · step **1,050 / 1,200** · loss 2.1") == ("running", 1050, 1200)
    assert run_progress("No training run yet") is None
    assert steps_per_second([(0.0, 0), (1.0, 0), (2.0, 10), (4.0, 30)]) == 10.0  # start-up not counted
    assert steps_per_second([(0.0, 0), (1.0, 5)]) is None
    assert trainer_spread({"a": {"steps_per_s": 10.0}, "b": {"steps_per_s": 12.5}}) == pytest.approx(0.25)
    assert trainer_spread({"a": {"steps_per_s": 10.0}, "b": {"steps_per_s": None}}) is None


@pytest.mark.parametrize("shared_model, attention_limit, rows", [(False, 1.0, 8), (True, 1.5, 7)])
def test_targets_of_each_mode(shared_model, attention_limit, rows):
    args = parse_args(["--sessions", "3", "--trainers", "2"] + ["--shared-model"] * shared_model)
    tally = Tally()
    tally.latencies = {"attention": [0.2, 0.4], "compare": [1.0]}
    tally.payload = {"attention": [1000, 1200], "compare": [100]}
    tally.progress = {"trainer 0": [(0.0, 1), (2.0, 21)], "trainer 1": [(0.0, 1), (2.0, 19)]}
    memory = SimpleNamespace(peak=2e9, peak_pss=1e9, peak_processes=4)
    numbers = summary(args, tally, Tally(), memory, {}, 0)
    targets = {t["target"]: t for t in numbers["targets"]}
    assert len(targets) == rows and targets["Attention p95, class (s)"]["limit"] == attention_limit
    assert targets["Attention p95, class (s)"]["value"] == 0.4
    assert targets["Attention p95, alone (s)"]["met"] is False  # not measured
    assert targets["trainers' steps/s, fastest ÷ slowest − 1"]["value"] == pytest.approx(10 / 9 - 1)
    assert numbers["class"]["latency"]["attention"]["bytes"] == 1100
    assert ("answers equal to the shipped model's (shared cache)" in targets) != shared_model


def test_a_tiny_class_on_models_of_their_own(app_url, own_zips):
    """One session alone and two analysers, each on an uploaded model of its own: no errors, no cross-talk, no
    answer from the shared cache; and a session left on the shipped model is caught getting the shipped answers."""
    args = parse_args(["--sessions", "2", "--trainers", "0", "--seconds", "4", "--think", "0.2", "--ramp", "0.2",
                       "--alone-rounds", "1", "--call-timeout", "60"])
    uploads = own_zips
    defaults = endpoint_defaults(app_url)
    references, digests = reference_fingerprints(app_url, lambda e, m: call_arguments(defaults, e, m))
    answers = Answers(digests["shakespeare"])
    alone = run_alone(Classroom(app_url, args, defaults, references, answers), uploads[0])
    tally = run_class(Classroom(app_url, args, defaults, references, answers), uploads[1:])
    for part in (alone, tally):
        assert (part.errors, part.crosstalk, part.shipped) == ([], [], [])
    assert set(alone.latencies) == {"load_model", *ANALYSIS} and len(tally.latencies["load_model"]) == 2
    assert set(tally.latencies) & set(ANALYSIS)  # the class got past its uploads
    assert min(alone.payload["attention"]) > 10_000  # the figures of a 60-token prompt
    on_shipped = run_alone(Classroom(app_url, args, defaults, references, answers), None)
    assert len(on_shipped.shipped) == len(ANALYSIS) and on_shipped.errors == []
