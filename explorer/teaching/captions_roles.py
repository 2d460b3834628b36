"""Captions of the Heads tab: the report card, the induction view, examples from the whole text, roles over
training. Pure functions: numbers in, one or two plain sentences out."""
import numpy as np

from explorer.common.wording import counted
from explorer.figures.common import head_label
from model_core.analysis.roles import ROLE_LABELS, SINK_REST

INDUCTION_FOUND = 0.3  # a head above this induction score counts as an induction head in the captions


def report_caption(roles: list, text_source: str, notes: list[str]) -> str:
    """How many heads play each role, and where the scores were measured."""
    counts = {}
    for r in roles:
        counts[r.label] = counts.get(r.label, 0) + 1
    parts = ", ".join(f"{n} {label}" for label, n in sorted(counts.items(), key=lambda item: -item[1]))
    text = (f"Of {counted(len(roles), 'head')}: {parts}. Scores are shares of the attention left after the first token "
            f"(the sink), measured on {text_source} and on a random sequence shown twice.")
    return " ".join([text] + list(notes))


def induction_caption(first_loss: float, second_loss: float, induction, vocab_size: int) -> str:
    """The loss drop on the second copy, and the strongest induction head (or that there is none)."""
    scores = np.asarray(induction, dtype=np.float64)
    layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
    best = float(scores[layer, head])
    text = (f"On the first copy the loss is {first_loss:.2f} (random guessing: {np.log(vocab_size):.2f}); on the "
            f"second copy it is {second_loss:.2f}.")
    if best >= INDUCTION_FOUND:
        return (text + f" The strongest induction head is {head_label(layer, head)} ({best:.0%}): on the second copy "
                "it looks at the token right after the earlier occurrence, the dotted stripe.")
    return (text + f" This model has no induction head yet: the best induction score is {best:.0%} "
            f"({head_label(layer, head)}), below {INDUCTION_FOUND:.0%}. Try the 'induction' demo model.")


def neuron_examples_caption(layer: int, neuron: int, values, firing_rate: float, n_tokens: int,
                            tokens: list[str], seconds: float) -> str:
    """Peak activation, how often the neuron fires over the split, the token it fires on most."""
    favourite = max(set(tokens), key=tokens.count) if tokens else ""
    return (f"Neuron {neuron} of layer {layer} fires (input > 0) at {firing_rate:.1%} of the {n_tokens:,} positions of "
            f"the validation text; its strongest activation is {float(np.max(values)):.2f}, and '{favourite}' is the "
            f"highlighted token in {tokens.count(favourite)} of its top {len(tokens)}. (Whole split scanned in "
            f"{seconds:.1f} s.)")


def dead_neurons_caption(firing_rate) -> str:
    """[L, M] firing rates over the split -> dead neurons per layer."""
    rates = np.asarray(firing_rate)
    dead = (rates == 0).sum(1)
    per_layer = ", ".join(f"L{L}: {int(n)}" for L, n in enumerate(dead))
    return (f"Over the whole validation split, {int(dead.sum())} of {rates.size} neurons never fire (dead) "
            f"({per_layer}); a neuron fires at {rates.mean():.0%} of positions on average.")


def head_examples_caption(layer: int, head: int, values, distances, seconds: float) -> str:
    """The head's strongest weights and how far back they reach."""
    distances = np.asarray(distances)
    return (f"Head {head_label(layer, head)}'s strongest attention weights over the validation text reach "
            f"{float(np.max(values)):.2f}; in its top {len(distances)} the query (yellow) comes a median "
            f"{int(np.median(distances))} tokens after the key (blue). (Whole split scanned in {seconds:.1f} s.)")


def film_caption(layer: int, head: int, steps, induction=None, val_loss=None) -> str:
    """When the head's induction score jumped, if it did, next to the loss."""
    text = f"{len(steps)} snapshots of {head_label(layer, head)} from step {int(steps[0]):,} to {int(steps[-1]):,}."
    if induction is None:
        return text + (" These snapshots were recorded before induction was tracked: only the attention on the "
                       "probe text is shown.")
    scores = np.asarray(induction, dtype=np.float64)
    if scores.max() < INDUCTION_FOUND:
        return text + f" Its induction score stays below {INDUCTION_FOUND:.0%} (at most {scores.max():.0%})."
    if len(scores) < 2:
        return text + f" Its induction score is {scores[0]:.0%}."
    jump = int(np.argmax(np.diff(scores))) + 1
    loss = ""
    if val_loss is not None and np.isfinite(val_loss[jump]):
        loss = f", where the validation loss is {val_loss[jump]:.2f}"
    return text + (f" Its induction score jumps the most between steps {int(steps[jump - 1]):,} and "
                   f"{int(steps[jump]):,} (to {scores[jump]:.0%}{loss}).")


def embedding_motion_caption(coords: list, steps, labels: list[str]) -> str:
    """coords [S] of [vocab, 2] (signs aligned across snapshots) -> the token that moved furthest, first to last."""
    first, last = np.asarray(coords[0], dtype=np.float64), np.asarray(coords[-1], dtype=np.float64)
    moved = np.linalg.norm(last - first, axis=1)  # [vocab]
    top = int(np.argmax(moved))
    return (f"From step {int(steps[0]):,} to {int(steps[-1]):,} the token that moves furthest in the picture is "
            f"'{labels[top]}' ({moved[top]:.2f}); on average a token moves {moved.mean():.2f}.")


# The Attention tab names what a head does on the prompt with the report card's labels (roles.ROLE_LABELS),
# measured the same way but on the prompt itself: one vocabulary for captions, the Heads tab and lessons.
NON_SINK = "of the attention it does not park on the first token"
ROLE_DOES = {  # label -> what a head with that role does on the prompt, given its share of the non-sink attention
    "induction": "an induction head: {share} " + NON_SINK + " goes to the token right after an earlier copy of the "
                 "current token (what came next last time)",
    "previous token": "a previous-token head: {share} " + NON_SINK + " goes to the token just before",
    "duplicate token": "a duplicate-token head: {share} " + NON_SINK + " goes to earlier copies of the current token",
    "self": "a self head: {share} " + NON_SINK + " stays on the current token",
    "local": "a local head: {share} " + NON_SINK + " goes to the last 4 tokens",
}
ROLE_NOUNS = {label: (f"{noun} head", f"{noun} heads") for label, noun in (
    ("induction", "induction"), ("previous token", "previous-token"), ("duplicate token", "duplicate-token"),
    ("self", "self"), ("local", "local"), ("focused", "focused"), ("broad", "broad"))}
ROLE_NOUNS["resting on the sink"] = ("head resting on the sink", "heads resting on the sink")
BITS = "0 bits is one token; every extra bit doubles the number of tokens it spreads over"


def head_on_prompt_caption(role, scores: dict, n_tokens: int) -> str:
    """The selected head's role on the prompt (a roles.HeadRole of roles.prompt_roles, and its scores {name: [L, H]})."""
    name = f"Head {head_label(role.layer, role.head)}"
    if n_tokens < 2:
        return f"{name} has only one token to look at, so it attends to itself."
    at = {key: float(np.asarray(value)[role.layer, role.head]) for key, value in scores.items()}
    sink = f"{at['sink']:.0%}"
    if role.label == "resting on the sink":
        return (f"{name} is resting on the sink: it puts {sink} of its attention on the first token, a parking place "
                "for a head with nothing to do here.")
    if role.label in ("broad", "focused"):
        how = ("broad: it spreads its attention over many earlier tokens" if role.label == "broad" else
               "focused: it keeps its attention on a few earlier tokens that none of the habits explains")
        does = f"{how} ({at['breadth']:.1f} of at most {at['breadth max']:.1f} bits; {BITS})"
    else:
        does = ROLE_DOES[role.label].format(share=f"{role.score:.0%}")
    return f"{name} is {does}. It puts {sink} of all its attention on the first token (the sink)."


def prompt_roles_caption(roles: list, scores: dict) -> str:
    """How many heads play each role on the prompt, with the strongest of each."""
    sink = np.asarray(scores["sink"])
    parts = []
    for label in ROLE_LABELS:
        mine = [r for r in roles if r.label == label]
        if not mine:
            continue
        best = max(mine, key=lambda r: r.score)
        value = sink[best.layer, best.head] if label == "resting on the sink" else best.score
        many = len(mine) > 1
        parts.append(f"{len(mine)} {ROLE_NOUNS[label][many]} ({'strongest ' * many}{head_label(best.layer, best.head)}, "
                     f"{value:.0%}{' on the first token' * (label == 'resting on the sink')})")
    return (f"Roles on this prompt: {'; '.join(parts)}. A head rests on the sink when {SINK_REST:.0%} or more of its "
            "attention is on the first token; the other roles are judged on the attention left after it.")
