"""RemoteTrainer: training in a child process, mirrored into the local Trainer."""
import os
import signal
import threading

import pytest
import torch

from model_core.training.remote import RemoteTrainer, sample_text
from model_core.training.trainer import TrainingError

from .test_trainer import make_trainer, pause_resume_stop, wait_for


def test_the_mirror_matches_a_run_in_this_process():
    local = make_trainer(seed=2, max_steps=25, eval_interval=10, snapshot_interval=10)
    mirrored = make_trainer(seed=2, max_steps=25, eval_interval=10, snapshot_interval=10)
    seen = []
    # the child runs as many torch threads as this process: reductions split alike, the same float sums
    assert RemoteTrainer(mirrored, threads=torch.get_num_threads()).run(callback=seen.append) == "finished"
    local.run()
    assert [m["step"] for m in seen if "loss" in m] == list(range(1, 26))
    assert [m["loss"] for m in mirrored.history] == pytest.approx([m["loss"] for m in local.history], rel=1e-6)
    assert [e["step"] for e in mirrored.evals] == [e["step"] for e in local.evals] == [0, 10, 20, 25]
    assert [s.step for s in mirrored.snapshots] == [s.step for s in local.snapshots]
    assert mirrored.step_count == 25 and mirrored.state == "finished"
    for name, value in local.model.state_dict().items():  # the final weights came back
        torch.testing.assert_close(mirrored.model.state_dict()[name], value)


def test_samples_come_from_the_child_model_at_that_step():
    trainer = make_trainer(max_steps=10, eval_interval=0)
    seen = []
    RemoteTrainer(trainer, sample_every=5, sample_tokens=12).run(callback=seen.append)
    samples = {m["step"]: m["sample"] for m in seen if "sample" in m}
    assert list(samples) == [5, 10]
    local = make_trainer(max_steps=10, eval_interval=0)  # the same run, in this process
    for step in (5, 10):
        local.run(max_steps=step)
        start = local.probe_ids[:1]
        assert samples[step] == sample_text(local.model, local.tokenizer, start, 12), step
        assert len(local.tokenizer.encode(samples[step])) == 13  # the start token and 12 new ones


def test_each_evaluation_brings_a_fresh_sample():
    """The early evaluations (steps 10 and 25 before the first interval of 40) come with a sample, as the
    interval's own do: the sample box never shows the untrained model's text long after training began."""
    trainer = make_trainer(max_steps=30, eval_interval=40, snapshot_interval=0)
    seen = []
    RemoteTrainer(trainer, sample_every=100, sample_tokens=8).run(callback=seen.append)
    assert [m["step"] for m in seen if "sample" in m] == [m["step"] for m in seen if "eval" in m] == [0, 10, 25, 30]


def test_pause_sends_the_weights_resume_and_stop_work_from_another_thread():
    trainer = make_trainer(max_steps=10**6, eval_interval=0)
    remote = RemoteTrainer(trainer, threads=torch.get_num_threads())  # same float sums as the local check
    pause_resume_stop(trainer, remote, remote.run, make_trainer(max_steps=10**6, eval_interval=0))
    assert not remote.process.is_alive()


def test_a_nan_in_the_child_raises_here_with_the_step():
    trainer = make_trainer(max_steps=5)
    with torch.no_grad():
        next(trainer.model.parameters()).fill_(float("nan"))
    with pytest.raises(TrainingError, match="at step 1"):
        RemoteTrainer(trainer).run()
    assert trainer.state == "error"


def test_a_child_that_dies_is_reported_not_waited_for():
    trainer = make_trainer(max_steps=10**6, eval_interval=0)
    remote = RemoteTrainer(trainer)
    errors = []
    thread = threading.Thread(target=lambda: errors.append(pytest.raises(TrainingError, remote.run)), daemon=True)
    thread.start()
    wait_for(lambda: trainer.step_count >= 1)
    os.kill(remote.process.pid, signal.SIGKILL)
    thread.join(timeout=30)
    assert not thread.is_alive() and "ended unexpectedly" in str(errors[0].value)
    assert trainer.state == "error"
