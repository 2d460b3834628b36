"""Captions for direct logit attribution and activation patching, computed from the numbers."""
import numpy as np

from explorer.figures.common import head_label

# which way a part pushes, as the charts draw it (their axis: figures.attribution.PART_AXIS)
DIRECTIONS = ("A part above 0 pushes the logit up (a red cell, a bar to the right of 0, a red bar in the chart "
              "below); a part below 0 pushes it down (a blue cell, a bar to the left of 0, a blue bar below).")


def attribution_caption(what: str, logit: float, total: float, heads, layer_parts: list[tuple[str, float]]) -> str:
    """'The logit of ␣Paris is 13.69; the parts sum to 13.69 ... The head with the largest part, up or down, is L29·H0: +4.10, for it; ...'"""
    heads = np.asarray(heads, dtype=np.float64)
    layer, head = np.unravel_index(int(np.abs(heads).argmax()), heads.shape)
    names, values = zip(*layer_parts)
    top = int(np.argmax(np.abs(values)))
    role = "for it" if heads[layer, head] > 0 else "against it (it pushes the answer down)"
    return (f"{what} is {logit:.2f}; the parts sum to {total:.2f} (the final norm's scale is frozen at this run's "
            f"value, which makes the split exact). {DIRECTIONS} The head with the largest part, up or down, is "
            f"{head_label(layer, head)}: {heads[layer, head]:+.2f}, {role}; the largest part overall is {names[top]} "
            f"({values[top]:+.2f}). Below: that head's part split by the position it read from.")


def source_caption(head: str, values, sources: list[str]) -> str:
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return ""
    i = int(np.abs(values).argmax())
    share = abs(values[i]) / max(np.abs(values).sum(), 1e-12)
    return (f"Head {head} gets {share:.0%} of its part from reading {sources[i]} ({values[i]:+.2f}): what it "
            f"copies from there pushes the prediction {'up' if values[i] > 0 else 'down'}.")


MIN_PATCHING_SPAN = 0.1  # logits between the clean and corrupted answers' differences; under it, shares are noise


def patching_caption(kind_name: str, best: str, restored: float, clean_diff: float, corrupted_diff: float,
                     answer: str, alternative: str) -> str:
    """'Patching head 29.0 restores 71 % of the logit difference between ␣Paris and ␣Rome (clean 5.2, corrupted -1.3).'
    Starts with a warning when the two differences are under MIN_PATCHING_SPAN apart."""
    return (small_span_warning(clean_diff, corrupted_diff)
            + f"The clean prompt prefers {answer} over {alternative} by {clean_diff:+.2f} logits, the corrupted one by "
            f"{corrupted_diff:+.2f}. Copying {kind_name} from the clean run into the corrupted one restores at most "
            f"{restored:.0%} of that difference, at {best}: the information that decides the answer is there.")


def small_span_warning(clean_diff: float, corrupted_diff: float) -> str:
    """A warning (with a trailing space) when the prompts barely change the answer, else ''."""
    span = abs(clean_diff - corrupted_diff)
    if span >= MIN_PATCHING_SPAN:
        return ""
    return (f"**Careful: the two prompts change the answer by only {span:.2g} logits** (under {MIN_PATCHING_SPAN}), so "
            "every share restored below is mostly rounding noise. Pick a corrupted prompt that changes the answer, "
            "or type the answer and the token it competes against. ")
