"""A training run keeps the weights of a few snapshots, and any of them can become model B."""
import copy
from types import SimpleNamespace

import gradio as gr
import pytest
import torch

from explorer.callbacks.second_model import snapshot_menu, use_snapshot_as_b
from explorer.common.errors import friendly
from explorer.common.limits import LIMITS
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from explorer.state.training_run import WEIGHT_SETS_KEPT, TrainingRun
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.training.child import weights_due
from tests.trainer_helpers import make_job


def finished_run(**train_overrides) -> tuple[TrainingRun, dict]:
    """A tiny run trained to the end in a child process, and its model's weights before training."""
    job = make_job(seed=3, eval_interval=0, **train_overrides)
    initial = copy.deepcopy(job.model.state_dict())
    run = TrainingRun(job, "tiny text", sample_every=0).start()
    run.thread.join(timeout=120)
    assert not run.active and run.progress.state == "finished", run.progress.error
    return run, initial


def session_with(run: TrainingRun) -> Session:
    session = Session(Inspected(Checkpoint(run.progress.model, run.progress.tokenizer), "tiny"))
    session.workspace.run = run
    return session


@pytest.mark.slow
def test_a_run_keeps_a_few_snapshot_weights_and_step_0_is_the_untrained_model():
    run, initial = finished_run(max_steps=60, snapshot_interval=5)  # 13 snapshots
    steps = [step for step, _ in run.progress.snapshot_weights]
    snapshot_steps = [s.step for s in run.progress.snapshots]
    assert 2 <= len(steps) <= WEIGHT_SETS_KEPT and set(steps) <= set(snapshot_steps)
    assert steps[0] == 0 and steps[-1] == snapshot_steps[-1] == 60 and steps == sorted(steps)
    menu = snapshot_menu(session_with(run))
    assert [value for _, value in menu.choices] == [f"step {s}" for s in reversed(steps)]

    session = session_with(run)
    assert "training snapshot at step 0 (tiny text)" in use_snapshot_as_b(session, "step 0")
    b = session.workspace.model_b.checkpoint
    assert b.model is not run.progress.model and b.tokenizer is run.progress.tokenizer
    for name, value in initial.items():  # exactly the weights before training
        assert torch.equal(b.model.state_dict()[name], value), name
    assert [s.step for s in b.snapshots] == [0] and b.history == []  # its record ends at its step

    use_snapshot_as_b(session, "step 60")
    final = session.workspace.model_b.checkpoint.model.state_dict()
    for name, value in run.progress.model.state_dict().items():  # the last set is the trained model
        assert torch.equal(final[name], value), name


def test_only_every_kth_snapshot_and_the_last_bring_weights():
    cfg = SimpleNamespace(max_steps=60, snapshot_interval=5)
    trainer = SimpleNamespace(cfg=cfg, step_count=0, stopping=False)
    due = []
    for index, step in enumerate([*range(0, 40, 5), 37]):  # a run stopped at step 37
        trainer.step_count, trainer.stopping = step, step == 37
        due.append(weights_due(trainer, index, every=3))
    assert due == [True, False, False, True, False, False, True, False, True]
    trainer.step_count, trainer.stopping = 60, False
    assert weights_due(trainer, 12, every=5) and not weights_due(trainer, 12, every=0)


def test_an_early_evaluations_snapshot_is_not_taken_for_the_last():
    """Snapshots also come with the early evaluations (steps 10, 25, ... off the snapshot interval): only a stop or
    the end makes an off-interval snapshot the run's last."""
    trainer = SimpleNamespace(cfg=SimpleNamespace(max_steps=1200, snapshot_interval=200), step_count=25,
                              stopping=False)
    assert not weights_due(trainer, 2, every=3)
    trainer.stopping = True
    assert weights_due(trainer, 2, every=3)


def test_a_model_over_the_parameter_limit_keeps_no_weights(monkeypatch):
    job = make_job(max_steps=10, snapshot_interval=5)
    monkeypatch.setattr(LIMITS, "max_params", job.model.num_params() - 1)
    assert TrainingRun(job, "tiny text").remote.job["weights_every"] == 0


def test_choosing_a_snapshot_without_a_run_or_a_kept_step_gets_a_message():
    job = make_job(max_steps=10, snapshot_interval=5)
    session = Session(Inspected(Checkpoint(job.model, job.tokenizer), "tiny"))
    assert "No training run" in snapshot_menu(session).info
    with pytest.raises(gr.Error, match="Train a model on the Train tab"):
        friendly(use_snapshot_as_b)(session, "step 0")
    session.workspace.run = TrainingRun(job, "tiny text")  # not started: nothing kept yet
    assert "kept no snapshot weights yet" in snapshot_menu(session).info
    with pytest.raises(gr.Error, match="no longer keeps the weights of step 5"):
        friendly(use_snapshot_as_b)(session, "step 5")
