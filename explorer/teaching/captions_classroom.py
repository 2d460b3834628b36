"""The teacher page's caption: what the class's loss curves say, computed from them."""
import numpy as np

RECENT = 20  # batches averaged for "where a run is now" (one batch's loss is noisy)


def class_caption(curves: list[dict]) -> str:
    """curves [{name, steps, loss, val_steps, val_loss}] -> who is lowest and highest now (the mean of each run's last
    RECENT batch losses), or what is missing."""
    if not curves:
        return "No runs yet: curves appear here as students train."
    now = [(float(np.mean(np.asarray(c["loss"])[-RECENT:])), c["name"], int(c["steps"][-1])) for c in curves]
    low, high = min(now), max(now)
    if len(curves) == 1:
        return f"One run so far: {low[1]}'s loss is {low[0]:.2f} at step {low[2]:,}."
    return (f"{len(curves)} runs. Lowest loss now: {low[1]} ({low[0]:.2f} at step {low[2]:,}); highest: {high[1]} "
            f"({high[0]:.2f} at step {high[2]:,}). A run far above the others at the same step learns more slowly "
            "(a smaller model, a higher learning rate, or other text).")
