"""Captions of a training run's losses, computed from them. Every number names the step it was measured at: an
evaluation is older than the latest batch, so the two are never set against each other."""
import numpy as np

from explorer.common.wording import counted

RECENT = 20  # batches averaged for "the batch loss now" (one batch's loss is noisy)
UNTRAINED_NOTE = ("an untrained model is more confidently wrong than uniform guessing (its random weights favour a few "
                  "tokens, rarely the right ones)")


def loss_caption(steps, train_loss, eval_steps=None, val_loss=None, eval_train_loss=None,
                 vocab_size: int | None = None, evaluated: str = "Validation loss") -> str:
    """Loss history -> how validation loss moved between its first and latest evaluation (each with its step), the
    train-val gap of the latest evaluation, the batch loss now when training has gone past that evaluation, and
    the guessing baseline (with why an untrained model scores above it). Without evaluations: the batch loss, from
    the chart's first point. evaluated names the evaluated curve (a run without a validation split evaluates the
    training text: pass its losses as val_loss and "Loss on the training text")."""
    steps, train_loss = np.asarray(steps), np.asarray(train_loss, dtype=np.float64)
    if val_loss is None or not len(val_loss):
        if not len(train_loss):
            return ""
        window = max(1, len(train_loss) // 10)  # smooth the noisy per-batch loss at the end
        start, end = float(train_loss[0]), float(np.mean(train_loss[-window:]))
        return (f"Training loss {_moved(start, end)} from {start:.2f} (the first batch, step {int(steps[0]):,}) to "
                f"{end:.2f} (mean of the last {window:,} of {counted(len(train_loss), 'step')})." + baseline_sentence(vocab_size))
    eval_steps, val_loss = [int(s) for s in eval_steps], [float(v) for v in val_loss]
    if len(val_loss) == 1:
        text = f"{evaluated} {val_loss[0]:.2f} (step {eval_steps[0]:,})"
    else:
        text = (f"{evaluated} {_moved(val_loss[0], val_loss[-1])} from {val_loss[0]:.2f} (step {eval_steps[0]:,}) "
                f"to {val_loss[-1]:.2f} (step {eval_steps[-1]:,})")
    if eval_train_loss is not None and len(eval_train_loss) and eval_steps[-1] > 0:
        text += "; " + gap_phrase(eval_steps, val_loss, [float(x) for x in eval_train_loss])
    text += "."
    if len(steps) and int(steps[-1]) > eval_steps[-1]:
        text += f" {batch_loss_sentence(steps, train_loss, evaluated)}"
    untrained = val_loss[0] if eval_steps[0] == 0 else None
    return text + baseline_sentence(vocab_size, untrained)


# A train-validation gap means overfitting only when it is clearly above 0 and clearly grew: by more than
# GAP_SHARE of the validation loss (0.03 at a loss of 1.5 nats), and never by less than GAP_FLOOR, which the
# caption prints as 0.00 or 0.01. Each evaluation averages a few batches, so a gap of "0.00, up from -0.03" is two
# equal losses measured twice, not a model that fits its training text better than new text.
GAP_SHARE, GAP_FLOOR = 0.02, 0.015


def clear_gap(val_loss: float) -> float:
    """The smallest gap (and rise of a gap) that says something at this validation loss."""
    return max(GAP_SHARE * abs(val_loss), GAP_FLOOR)


def gap_phrase(eval_steps: list, val_loss: list, train_loss: list) -> str:
    """The latest train-validation gap and which way it went since the evaluation before; overfitting only when it
    is clearly positive and clearly growing (clear_gap)."""
    gap = val_loss[-1] - train_loss[-1]
    text = f"at step {eval_steps[-1]:,} the train–validation gap is {_two_places(gap)}"
    if len(val_loss) < 2 or eval_steps[-2] == 0:  # the untrained model's gap says nothing
        return text + " (a growing gap means overfitting)"
    before, clear = val_loss[-2] - train_loss[-2], clear_gap(val_loss[-1])
    since = f"from {_two_places(before)} at step {eval_steps[-2]:,}"
    if abs(gap - before) < 0.005:
        return text + f", as at step {eval_steps[-2]:,}"
    if gap > clear and gap - before > clear:
        return text + f", up {since}: growing, a sign of overfitting"
    if gap <= clear:
        return text + f", {'up' if gap > before else 'down'} {since}: the two losses are level (within {clear:.2f}), " \
                      "no sign of overfitting"
    return text + f", {'up' if gap > before else 'down'} {since}"


def _two_places(x: float) -> str:
    """x to two decimals, never "-0.00" (a student read seed 004's "gap is -0.00" as a mistake)."""
    return f"{round(float(x), 2) + 0.0:.2f}"


def batch_loss_sentence(steps, train_loss, evaluated: str = "Validation loss") -> str:
    """'The training batches' loss is 1.88 now (mean of the last 20, step 140); validation loss is measured only
    at evaluations.'"""
    recent = np.asarray(train_loss, dtype=np.float64)[-RECENT:]
    return (f"The training batches' loss is {recent.mean():.2f} now (mean of the last {len(recent)}, step "
            f"{int(steps[-1]):,}); {evaluated[0].lower() + evaluated[1:]} is measured only at evaluations.")


def baseline_sentence(vocab_size: int | None, untrained_loss: float | None = None) -> str:
    """' Random guessing would score 4.17 (ln 65).' and, when the untrained model scored above it, why."""
    if not vocab_size:
        return ""
    guess = float(np.log(vocab_size))
    text = f" Random guessing would score {guess:.2f} (ln {vocab_size:,})"
    if untrained_loss is not None and round(untrained_loss, 2) > round(guess, 2):  # above it as printed
        text += f"; the untrained model's {untrained_loss:.2f} at step 0 is above it because {UNTRAINED_NOTE}"
    return text + "."


def _moved(start: float, end: float) -> str:
    return "fell" if end < start else "rose" if end > start else "stayed"
