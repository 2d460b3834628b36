"""The Train tab's progress in the first minute: each loss names the step it was measured at, the next evaluation is
announced, and the untrained model's snapshot and sample show at once (computed from a run in this process)."""
from types import SimpleNamespace

from explorer.callbacks import train
from explorer.state.training_run import TrainingRun

from .test_trainer import make_trainer


def paused_at_step_14():
    """Evaluated at steps 0 and 10 (an early evaluation), then 4 more steps: the latest evaluation is stale."""
    trainer = make_trainer(max_steps=60, eval_interval=20, snapshot_interval=20)
    trainer.evaluate()
    trainer.snapshot()
    for _ in range(10):
        trainer.step()
    trainer.evaluate()
    for _ in range(4):
        trainer.step()
    trainer.state = "paused"
    return SimpleNamespace(trainer=trainer, error=None, active=True, samples=[])


def test_the_status_names_the_step_of_the_evaluation_it_shows():
    run = paused_at_step_14()
    t = run.trainer
    text = train.status_text(run, t.history[-1])
    assert f"step **14 / 60** · batch loss {t.history[-1]['loss']:.3f}" in text
    assert f"val loss **{t.evals[-1]['val_loss']:.3f}** (step 10)" in text
    assert f"to {t.evals[-1]['val_loss']:.2f} (step 10)" in text and "over 14 steps" not in text
    assert "(mean of the last 14, step 14)" in text
    assert text.endswith("Next evaluation (and sample, and attention) at step 20.")
    run.active = False  # a finished or stopped run announces nothing
    assert "Next evaluation" not in train.status_text(run, t.history[-1])


def test_a_fresh_evaluation_carries_no_step_of_its_own():
    run = paused_at_step_14()
    run.trainer.evaluate()  # now at step 14
    assert f"val loss **{run.trainer.evals[-1]['val_loss']:.3f}** ·" in train.status_text(run, run.trainer.history[-1])


def test_the_untrained_models_attention_and_sample_show_before_the_first_step():
    trainer = make_trainer(max_steps=60, eval_interval=20, snapshot_interval=20)
    run = TrainingRun(trainer, "tiny text")  # not started: the poller reads its mirror only
    trainer.snapshot()  # the step-0 snapshot, as the child's first message brings it
    figure, caption = train.live_attention(run)
    assert figure and caption.startswith("Step 0 on the probe text.")
    run.samples.append((0, "xq zv"))
    assert train.sample_text(run) == "step 0 (untrained):\nxq zv"
    run.samples.append((25, "the cat"))
    assert train.sample_text(run) == "step 25:\nthe cat"
