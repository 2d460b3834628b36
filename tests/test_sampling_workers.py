"""Compare in worker processes: the same completions as in this process, token for token; a frozen model stays
here; a killed worker falls back to this process; shutdown leaves no worker behind."""
import os
import signal
import subprocess
import sys

import pytest

from model_core.model.sampling import SamplingSettings, compare
from model_core.training import sampling_workers
from model_core.training.process_setup import process_alive
from tests.helpers import ROOT, tiny_model, wait_for

pytestmark = pytest.mark.slow

SETTINGS = [SamplingSettings(0.0), SamplingSettings(1.0, top_k=5), SamplingSettings(1.5, top_p=0.9),
            SamplingSettings(0.8, min_p=0.1)]


@pytest.fixture
def workers(monkeypatch):
    monkeypatch.setattr(sampling_workers, "WORKERS", 2)  # the app's default (the library's is 0: in-process)
    sampling_workers.shutdown()  # a pool another module of this process left: each test starts from none
    yield sampling_workers
    sampling_workers.shutdown()


def tokens(completions):
    return [(c.tokens, round(c.mean_logprob, 5)) for c in completions]


def test_a_worker_draws_what_this_process_draws(workers):
    model = tiny_model(seed=3, block_size=8, positional="rope")
    here = compare(model, [1, 2, 3], SETTINGS, 20, seed=7)
    there = workers.compare_in_worker(model, [1, 2, 3], SETTINGS, 20, seed=7)
    assert tokens(there) == tokens(here)
    assert 1 <= len(workers.worker_pids()) <= workers.WORKERS  # started on demand, at most WORKERS
    again = workers.compare_in_worker(model, [1, 2, 3], SETTINGS, 20, seed=8)
    assert tokens(again) != tokens(here)  # the seed reaches the worker


def test_a_frozen_model_is_compared_here(workers):
    model = tiny_model(seed=1).freeze()
    assert tokens(workers.compare_in_worker(model, [1, 2], SETTINGS[:2], 5)) == tokens(compare(model, [1, 2],
                                                                                               SETTINGS[:2], 5))
    assert workers.worker_pids() == []  # no pool was started for it


def test_a_killed_worker_falls_back_and_the_next_call_gets_a_fresh_pool(workers):
    model = tiny_model(seed=2)
    workers.start()
    for pid in workers.worker_pids():
        os.kill(pid, signal.SIGKILL)
    expected = tokens(compare(model, [4, 5], SETTINGS, 10, seed=1))
    assert tokens(workers.compare_in_worker(model, [4, 5], SETTINGS, 10, seed=1)) == expected
    assert tokens(workers.compare_in_worker(model, [4, 5], SETTINGS, 10, seed=1)) == expected
    old = workers.worker_pids()
    workers.shutdown()
    assert old and not any(process_alive(pid) for pid in old) and workers.worker_pids() == []


APP_THAT_DIES = """
import os, sys
from model_core.training import sampling_workers
if __name__ == "__main__":
    sampling_workers.WORKERS = 2
    assert sampling_workers.start()
    print(" ".join(map(str, sampling_workers.worker_pids())), flush=True)
    os._exit(0)  # no shutdown: as if the app were killed
"""


def test_workers_end_when_the_app_dies_without_a_shutdown(tmp_path):
    """A forkserver child holds the forkserver's liveness pipe: without their own watch, the workers and the
    forkserver would keep each other alive after the app is gone."""
    script = tmp_path / "app_that_dies.py"
    script.write_text(APP_THAT_DIES)
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    pids = [int(p) for p in out.stdout.split()]
    assert pids, out.stderr[-2000:]
    wait_for(lambda: not any(process_alive(p) for p in pids),  # (a zombie counts as gone)
             lambda: f"the workers ending; alive: {[p for p in pids if process_alive(p)]}", timeout=10, interval=0.1)
