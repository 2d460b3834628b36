"""The Train tab's progress in the first minute: each loss names the step it was measured at, the next evaluation is
announced, and the untrained model's snapshot and sample show at once (the run's record is fed the messages a run
in this process would have sent)."""
from types import SimpleNamespace

import pytest

from explorer.callbacks import train
from explorer.state.training_run import TrainingRun
from model_core.training.run_protocol import Confirmed, RunProgress, Steps
from tests.trainer_helpers import make_job, make_trainer


def paused_at_step_14():
    """Evaluated at steps 0 and 10 (an early evaluation), then 4 more steps: the latest evaluation is stale."""
    trainer = make_trainer(max_steps=60, eval_interval=20, snapshot_interval=20)
    steps = [{"step": 0, "eval": trainer.evaluate(), "snapshot": trainer.snapshot()}]
    steps += [trainer.step() for _ in range(10)]
    steps[-1]["eval"] = trainer.evaluate()
    steps += [trainer.step() for _ in range(4)]
    progress = RunProgress(trainer.model, trainer.cfg, trainer.tokenizer)
    progress.apply(Steps(steps))
    progress.apply(Confirmed("paused"))
    return SimpleNamespace(progress=progress, active=True), trainer


@pytest.mark.slow
def test_the_status_names_the_step_of_the_evaluation_it_shows():
    run, _ = paused_at_step_14()
    p = run.progress
    text = train.status_text(run, p.history[-1])
    assert f"step **14 / 60** · batch loss {p.history[-1]['loss']:.3f}" in text
    assert f"val loss **{p.evals[-1]['val_loss']:.3f}** (step 10)" in text
    assert f"to {p.evals[-1]['val_loss']:.2f} (step 10)" in text and "over 14 steps" not in text
    assert "(mean of the last 14, step 14)" in text
    assert text.endswith("Next evaluation (and sample, and attention) at step 20.")
    run.active = False  # a finished or stopped run announces nothing
    assert "Next evaluation" not in train.status_text(run, p.history[-1])


@pytest.mark.slow
def test_a_fresh_evaluation_carries_no_step_of_its_own():
    run, trainer = paused_at_step_14()
    run.progress.apply(Steps([{"step": 14, "eval": trainer.evaluate()}]))  # now at step 14
    p = run.progress
    assert f"val loss **{p.evals[-1]['val_loss']:.3f}** ·" in train.status_text(run, p.history[-1])


def test_the_untrained_models_attention_and_sample_show_before_the_first_step():
    run = TrainingRun(make_job(max_steps=60, eval_interval=20, snapshot_interval=20), "tiny text")  # not started
    snapshot = make_trainer(max_steps=60, eval_interval=20, snapshot_interval=20).snapshot()
    run.progress.apply(Steps([{"step": 0, "snapshot": snapshot, "sample": "xq zv"}]))  # the child's first message
    figure, caption = train.live_attention(run)
    assert figure and caption.startswith("Step 0 on the probe text.")
    assert train.sample_text(run) == "step 0 (untrained):\nxq zv"
    run.progress.apply(Steps([{"step": 25, "sample": "the cat"}]))
    assert train.sample_text(run) == "step 25:\nthe cat"
