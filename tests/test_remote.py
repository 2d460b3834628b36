"""RemoteTrainer: training in a child process, its messages applied to the run's one record (RunProgress)."""
from types import SimpleNamespace

import pytest
import torch

from model_core.training.child import sample_text
from model_core.training.remote import RemoteTrainer
from model_core.training.run_protocol import Command
from tests.trainer_helpers import make_job, make_trainer, pause_resume_stop

pytestmark = pytest.mark.slow


def test_the_record_matches_a_run_in_this_process():
    local = make_trainer(seed=2, max_steps=25, eval_interval=10, snapshot_interval=10)
    # the child runs as many torch threads as this process: reductions split alike, the same float sums
    remote = RemoteTrainer(make_job(seed=2, max_steps=25, eval_interval=10, snapshot_interval=10),
                           threads=torch.get_num_threads())
    assert remote.run() == "finished"
    local.run()
    p = remote.progress
    assert [m["step"] for m in p.history] == list(range(1, 26))
    assert [m["loss"] for m in p.history] == pytest.approx([m["loss"] for m in local.history], rel=1e-6)
    assert [e["step"] for e in p.evals] == [e["step"] for e in local.evals] == [0, 10, 20, 25]
    assert [s.step for s in p.snapshots] == [s.step for s in local.snapshots]
    assert p.step == 25 and p.state == "finished" and p.error is None
    for name, value in local.model.state_dict().items():  # the final weights came back
        torch.testing.assert_close(p.model.state_dict()[name], value)


def test_samples_come_every_so_many_steps_and_with_each_evaluation_from_the_model_at_that_step():
    """The early evaluations (steps 10 and 25 before the first interval of 40) come with a sample, as the
    interval's own do: the sample box never shows the untrained model's text long after training began."""
    remote = RemoteTrainer(make_job(max_steps=30, eval_interval=40), sample_every=20, sample_tokens=12)
    remote.run()
    samples, p = dict(remote.progress.samples), remote.progress
    assert list(samples) == [0, 10, 20, 25, 30] and [e["step"] for e in p.evals] == [0, 10, 25, 30]
    local = make_trainer(max_steps=30, eval_interval=40)  # the same run, in this process
    for step in (20, 30):
        local.run(max_steps=step)
        assert samples[step] == sample_text(local.model, local.tokenizer, local.probe_ids[:1], 12), step
        assert len(local.tokenizer.encode(samples[step])) == 13  # the start token and 12 new ones


def test_pause_sends_the_weights_resume_and_stop_work_from_another_thread():
    remote = RemoteTrainer(make_job(max_steps=10**6, eval_interval=0), threads=torch.get_num_threads())
    commands = SimpleNamespace(pause=lambda: remote.send(Command.PAUSE), resume=lambda: remote.send(Command.RESUME),
                               stop=lambda: remote.send(Command.STOP))
    pause_resume_stop(remote.progress, commands, remote.run, make_trainer(max_steps=10**6, eval_interval=0),
                      steps=lambda p: p.step)
    assert not remote.process.is_alive()


def test_a_nan_in_the_child_is_the_runs_error_with_the_step():
    job = make_job(max_steps=5)
    with torch.no_grad():
        next(job.model.parameters()).fill_(float("nan"))
    remote = RemoteTrainer(job)
    assert remote.run() == "error" and remote.progress.state == "error"
    assert "at step 1" in remote.progress.error  # (a child that dies: tests/test_lifecycle.py)


def test_an_idle_forkserver_ends_when_asked_and_the_next_run_starts_a_new_one(monkeypatch):
    """A single-user server (a JupyterHub student's) gives back the forkserver's ~350 MB between runs."""
    from multiprocessing import forkserver

    from model_core.training import remote as remote_module
    from tests.helpers import alive, wait_for

    monkeypatch.setattr(remote_module, "_idle_stop_seconds", None)
    monkeypatch.setattr(forkserver._forkserver, "_preload_modules", forkserver._forkserver._preload_modules)
    remote_module.stop_forkserver_when_idle(0.3)
    assert RemoteTrainer(make_job(max_steps=3)).run() == "finished"
    first = forkserver._forkserver._forkserver_pid
    wait_for(lambda: not alive(first), "the idle forkserver to end", 10)
    assert RemoteTrainer(make_job(max_steps=3)).run() == "finished"  # started again on demand
    second = forkserver._forkserver._forkserver_pid
    assert second != first and alive(second)
    wait_for(lambda: not alive(second), "the second one to end too", 10)  # then the other tests' runs keep theirs
