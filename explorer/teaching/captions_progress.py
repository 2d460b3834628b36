"""Captions of the progress measures (Train tab) and of the grokking lab, computed from the data."""
from typing import Optional

import numpy as np

INDUCTION_THRESHOLD = 0.3  # an induction score above this: the head clearly looks one token past the repeat


def first_step(steps, values, threshold: float, above: bool = True) -> Optional[int]:
    """The first step whose value is at or above (or below) threshold, or None."""
    for s, v in zip(steps, values):
        if v is not None and np.isfinite(v) and (v >= threshold if above else v <= threshold):
            return int(s)
    return None


def steepest_drop(steps, values, span: int) -> tuple[int, int, float]:
    """(from step, to step, drop) of the largest fall of values between two evaluations at most `span` steps
    apart (drop > 0 means the value fell)."""
    steps, values = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    best = (int(steps[0]) if len(steps) else 0, int(steps[0]) if len(steps) else 0, 0.0)
    for i in range(len(steps)):
        for j in range(i + 1, len(steps)):
            if steps[j] - steps[i] > span:
                break
            drop = values[i] - values[j]
            if np.isfinite(drop) and drop > best[2]:
                best = (int(steps[i]), int(steps[j]), float(drop))
    return best


def progress_caption(steps, series: dict, max_steps: int) -> str:
    """One or two sentences on what the progress measures show so far."""
    if not steps:
        return "The progress measures appear with the first evaluation."
    parts = []
    if "induction" in series:
        crossed = first_step(steps, series["induction"], INDUCTION_THRESHOLD)
        now = series["induction"][-1]
        parts.append(f"The strongest induction score is {now:.2f}" + (
            f"; it crossed {INDUCTION_THRESHOLD} at step {crossed:,}." if crossed is not None else
            f", below {INDUCTION_THRESHOLD}: no induction head yet."))
    if "icl" in series and np.isfinite(series["icl"][-1]):  # a checkpoint from before icl_score left out NaN
        spacing = int(np.diff(steps).max()) if len(steps) > 1 else 1  # at least two evaluations apart
        a, b, drop = steepest_drop(steps, series["icl"], max(spacing, max_steps // 10))
        parts.append(f"The in-context-learning score is {series['icl'][-1]:+.2f} nats (negative: later tokens are "
                     f"predicted better than early ones)" + (
                         f"; its steepest fall, {drop:.2f} nats, came between steps {a:,} and {b:,}." if drop > 0.1
                         else "."))
    if "train_acc" in series:
        parts.append(accuracy_sentence(steps, series["train_acc"], series.get("val_acc")))
    return " ".join(parts)


def accuracy_sentence(steps, train_acc, test_acc=None) -> str:
    """When train accuracy reached 100 % and test accuracy 99 %, and the gap between (grokking)."""
    memorised = first_step(steps, train_acc, 0.999)
    text = (f"Train accuracy reached 100 % at step {memorised:,}" if memorised is not None
            else f"Train accuracy is {train_acc[-1]:.0%}")
    if test_acc is None:
        return text + "."
    general = first_step(steps, test_acc, 0.99)
    if general is None:
        return text + f"; test accuracy (pairs never trained on) is {test_acc[-1]:.0%}: not generalised yet."
    gap = f", {general - memorised:,} steps later" if memorised is not None and general > memorised else ""
    return text + f"; test accuracy reached 99 % at step {general:,}{gap}."
