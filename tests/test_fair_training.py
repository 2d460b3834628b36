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
from model_core.training.child import CHILD_NICE
from model_core.training.run_protocol import Command
from tests.helpers import wait_for
from tests.trainer_helpers import make_job

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]


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
        made.append(TrainingRun(make_job(max_steps=10**6, eval_interval=0), "tiny", sample_every=0).start())
        return made[-1]

    yield start
    for run in made:
        run.control(Command.STOP)
    for run in made:
        run.thread.join(timeout=30)
        assert not run.active, "a training thread did not stop"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads thread priorities from Linux's /proc")
def test_every_thread_of_a_child_runs_below_the_app(start_run):
    run = start_run()
    wait_for(lambda: run.progress.step >= 2)  # its OpenMP, queue and command threads exist by now
    app = os.getpriority(os.PRIO_PROCESS, 0)
    if app >= 19:
        pytest.skip("the app already runs at the lowest priority")
    child = os.getpriority(os.PRIO_PROCESS, run.remote.process.pid)
    assert child == min(19, app + CHILD_NICE) > app
    assert thread_nices(run.remote.process.pid) == {child}


def test_each_child_runs_with_the_policys_share_as_runs_start_and_end(start_run):
    """(Who is told what as runs pause and resume: tests/test_run_progress.py, without processes.)"""
    first = start_run()
    a = first.progress
    wait_for(lambda: a.threads_running == threads_per_run(1) == 2)
    second = start_run()  # started with its share, not torch's default of every core
    b = second.progress
    wait_for(lambda: a.threads_running == b.threads_running == threads_per_run(2) == 1)
    assert a.threads_told == b.threads_told == 1  # what each was told
    second.control(Command.STOP)
    second.thread.join(timeout=30)
    wait_for(lambda: a.threads_running == 2)
