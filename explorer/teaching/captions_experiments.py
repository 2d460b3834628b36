"""Captions for the Experiments tab, computed from the numbers (explorer/teaching/captions.py holds the other tabs')."""
import numpy as np

from explorer.common.wording import counted
from explorer.figures.common import head_label

SMALL_CHANGE = 0.01  # nats: a change in validation loss below this is "no real change"


def _change(before: float, after: float) -> str:
    """'rises from 1.63 to 1.91' / 'falls from ...' / 'stays at 1.63'."""
    if abs(after - before) < 0.005:
        return f"stays at {before:.2f}"
    return f"{'rises' if after > before else 'falls'} from {before:.2f} to {after:.2f}"


def ablation_caption(what: str, mode: str, val_before: float, val_after: float, loss_diff, targets: list[str],
                     contexts: list[str], top: int = 3) -> str:
    """'Without head L1·H3 (mean-ablated) the validation loss rises from 1.63 to 1.91 nats per token; on this
    prompt the hardest-hit tokens are 12:e (after “th”, +2.10), ...'. loss_diff [T-1] per predicted token,
    targets[i] its position:token label, contexts[i] the text just before it."""
    how = "replaced by its mean" if mode == "mean" else "set to zero"
    text = f"With {what} {how}, the loss on the validation text {_change(val_before, val_after)} nats per token"
    diff = np.asarray(loss_diff, dtype=np.float64)
    if diff.size == 0:
        return text + "."
    worst = [i for i in np.argsort(-diff, kind="stable")[:top] if diff[i] > SMALL_CHANGE]
    if not worst:
        return text + "; on this prompt no token got harder to predict."
    hit = ", ".join(f"{targets[i]} (after “{contexts[i]}”, {diff[i]:+.2f})" for i in worst)
    return text + f"; on this prompt the tokens that got hardest to predict are {hit}."


def importance_caption(base_loss: float, head_increase, mlp_increase=None, estimated: bool = False) -> str:
    """Names the head whose removal hurts most (and the FFN layer), and how many heads barely matter; estimated:
    the changes are first-order estimates (attribution patching), and the caption says so."""
    heads = np.asarray(head_increase, dtype=np.float64)
    layer, head = np.unravel_index(int(np.argmax(heads)), heads.shape)
    name = head_label(layer, head)
    text = f"Knocking out head {name} hurts most: the validation loss rises by {heads[layer, head]:.3f} nats from " \
           f"{base_loss:.2f}"
    if mlp_increase is not None and len(mlp_increase):
        mlp = np.asarray(mlp_increase, dtype=np.float64)
        top = int(np.argmax(mlp))
        text += f"; the FFN of layer {top} matters most of all units ({mlp[top]:+.2f})" if mlp[top] > heads.max() \
            else f"; the most important FFN layer is {top} ({mlp[top]:+.2f})"
    quiet = int((np.abs(heads) < SMALL_CHANGE).sum())
    text += (f". {quiet} of {counted(heads.size, 'head')} change it by less than {SMALL_CHANGE}. Type {layer}.{head} "
             f"(layer.head, for {name}) in “Heads” above (or press “Knock out the most important head”) to see what "
             "it does.")
    if estimated:
        text += (f" These {heads.size} numbers are estimates (attribution patching: activation change × gradient, "
                 "from one forward and one backward pass), since knocking out every unit of a model this large one "
                 "at a time would take minutes; the knock-out above measures a head for real.")
    return text


def compare_caption(names: tuple, bpc: tuple, diff_bits, positions: list[str], same_kind: bool) -> str:
    """'On this text A (…) needs 1.90 bits per character and B (…) 2.40: A predicts it better; B falls furthest
    behind at 12:e (+3.1 bits).' diff_bits [n]: B − A per character, positions[i] its 'index:character'."""
    a, b = bpc
    if abs(a - b) < 0.005:
        verdict = "they predict it equally well"
    else:
        verdict = f"{'A' if a < b else 'B'} predicts it better"
    text = f"On this text A ({names[0]}) needs {a:.2f} bits per character and B ({names[1]}) {b:.2f}: {verdict}"
    diff = np.asarray(diff_bits, dtype=np.float64)
    if diff.size:
        i, j = int(np.argmax(diff)), int(np.argmin(diff))
        if diff[i] > SMALL_CHANGE:
            text += f"; B falls furthest behind at {positions[i]} ({diff[i]:+.1f} bits)"
        if diff[j] < -SMALL_CHANGE:
            text += f"; B is furthest ahead at {positions[j]} ({diff[j]:+.1f} bits)"
    if not same_kind:
        text += (". Their kinds of tokenizer differ, so compare bits per character: a token-level loss would favour the "
                 "model whose tokens are shorter")
    return text + "."
