"""Training children share the CPU fairly and below the app: each child runs with the share of the cores the
policy gives for the runs training at that moment (as it says itself, not only as it was told), and every one
of its threads runs at a lower priority than the app. Behaviour only: no timing (python -m bench.trainers
measures the steps/s)."""
import os
from pathlib import Path

import pytest

from explorer.common.limits import LIMITS
from explorer.state import training_run
from explorer.state.training_run import TrainingRun, threads_per_run
from model_core.training.remote import CHILD_NICE

from .test_trainer import make_trainer, wait_for

pytestmark = pytest.mark.timeout(120)


def thread_nices(pid: int) -> set[int]:
    """The nice value of every thread of a process (Linux keeps it per thread)."""
    nices = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        nices.add(int(stat[stat.rindex(")") + 2:].split()[16]))
    return nices


@pytest.fixture
def start_run(monkeypatch):
    """Starts tiny endless runs the way a session does; stops and joins them after the test. The policy sees
    2 cores whatever the machine, so one run gets 2 threads and two runs 1 each."""
    monkeypatch.setattr(training_run, "cores", lambda: 2)
    monkeypatch.setattr(LIMITS, "max_trainers", 2)
    made = []

    def start() -> TrainingRun:
        made.append(TrainingRun(make_trainer(max_steps=10**6, eval_interval=0), "tiny", sample_every=0).start())
        return made[-1]

    yield start
    for run in made:
        run.control("stop")
    for run in made:
        run.thread.join(timeout=30)
        assert not run.active, "a training thread did not stop"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads thread priorities from Linux's /proc")
def test_every_thread_of_a_child_runs_below_the_app(start_run):
    run = start_run()
    wait_for(lambda: run.trainer.step_count >= 2)  # its OpenMP, queue and command threads exist by now
    app = os.getpriority(os.PRIO_PROCESS, 0)
    if app >= 19:
        pytest.skip("the app already runs at the lowest priority")
    child = os.getpriority(os.PRIO_PROCESS, run.remote.process.pid)
    assert child == min(19, app + CHILD_NICE) > app
    assert thread_nices(run.remote.process.pid) == {child}


def test_each_child_runs_with_the_policys_share_as_runs_start_pause_resume_and_end(start_run):
    first = start_run()
    wait_for(lambda: first.remote.child_threads == threads_per_run(1) == 2)
    second = start_run()  # started with its share, not torch's default of every core
    wait_for(lambda: first.remote.child_threads == second.remote.child_threads == threads_per_run(2) == 1)
    assert first.remote.threads == second.remote.threads == 1  # what each was told

    second.control("pause")  # a paused run needs no share: the other gets every core
    wait_for(lambda: second.state == "paused" and first.remote.child_threads == 2)
    second.control("resume")
    wait_for(lambda: first.remote.child_threads == second.remote.child_threads == 1)

    second.control("stop")
    second.thread.join(timeout=30)
    wait_for(lambda: first.remote.child_threads == 2)
