"""Captions of the Heads tab's circuits section, computed from the data."""
import numpy as np


def head_caption(layer: int, head: int, copying: float, self_top: float, qk, names: list[str],
                 positional: str, position_scores=None) -> str:
    """position_scores [P, P]: the positional QK circuit (NaN above the diagonal), or None without one."""
    kind = ("copies: attending to a token raises that same token's logit" if copying > 0.5 else
            "suppresses the tokens it attends to" if copying < -0.5 else "neither clearly copies nor suppresses")
    qk = np.asarray(qk, dtype=np.float64)
    diag = float(np.mean(np.diag(qk) >= qk.max(1) - 1e-12)) if len(qk) else 0.0
    text = (f"L{layer}·H{head} has copying score **{copying:+.2f}**: it {kind}. For {self_top:.0%} of the "
            f"{len(names)} tokens shown, the token it raises most (over the whole vocabulary) is the attended "
            f"token itself. In its QK circuit, {diag:.0%} of the tokens score themselves highest as keys.")
    if positional == "rope":
        text += (" Rotary positions turn q and k by their positions, so this QK circuit is the one at distance 0 "
                 "(what the tokens' content alone asks for).")
    text += " Both circuits read the embeddings directly (the path through earlier layers is left out)."
    return text + ("" if position_scores is None else positional_sentence(position_scores))


def positional_sentence(scores) -> str:
    """Which key position most query positions score highest from positions alone (itself, one back, ...)."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(scores) < 2:
        return ""
    offsets = [q - int(np.argmax(np.where(np.isfinite(row[:q + 1]), row[:q + 1], -np.inf)))
               for q, row in enumerate(scores[1:], start=1)]
    back = max(set(offsets), key=offsets.count)
    where = "themselves" if back == 0 else "the position just before" if back == 1 else f"the position {back} back"
    return (f" From positions alone, {offsets.count(back) / len(offsets):.0%} of the query positions after the "
            f"first score {where} highest.")


def composition_caption(scores, kind: str, links: list, previous: dict, induction: dict, copying) -> str:
    """scores [L, H, L, H] of the chart's kind ('q', 'k' or 'v'); links from the K-composition scores, strongest
    first -> the strongest pair, the induction circuit (where it ranks in a K chart) and the head that copies most."""
    if scores.shape[0] < 2:
        return "This model has one layer: no head can read what another head wrote, so there is no composition."
    text = strongest_pair_sentence(scores, kind.upper())
    if links:
        a = links[0]
        rank = f", {pair_rank(scores, a[4])}" if kind == "k" else ""
        text += (f" The induction circuit: previous-token head L{a[0]}·H{a[1]} → induction head L{a[2]}·H{a[3]} "
                 f"(K-composition {a[4]:.2f}{rank}): the induction head's key reads which token came before, "
                 "written by the previous-token head.")
    elif induction:
        text += " Induction heads were found, but no previous-token head in an earlier layer."
    else:
        text += " No induction head scores 0.3 or more on the repeated probe."
    best = np.unravel_index(int(np.argmax(copying)), copying.shape)
    return text + f" The head that copies most is L{best[0]}·H{best[1]} (copying score {float(copying[best]):+.2f})."


def later_pairs(scores) -> np.ndarray:
    """[L, H, L, H] -> bool, True for the pairs the chart draws (the second head in a later layer)."""
    layers = np.arange(scores.shape[0])
    return (layers[:, None, None, None] < layers[None, None, :, None]) & np.ones(scores.shape, dtype=bool)


def later_pair_scores(scores) -> np.ndarray:
    """[L, H, L, H] -> the scores of the pairs the chart draws, highest first."""
    return np.sort(np.asarray(scores, dtype=np.float64)[later_pairs(scores)])[::-1]


def strongest_pair_sentence(scores, name: str) -> str:
    """The pair that composes most, and how far above the next pair and the median pair it stands."""
    i = np.unravel_index(int(np.argmax(np.where(later_pairs(scores), scores, -np.inf))), scores.shape)
    pair, pairs = f"L{i[0]}·H{i[1]} → L{i[2]}·H{i[3]} at", later_pair_scores(scores)
    if len(pairs) < 2:
        return f"The strongest {name}-composition is {pair} {pairs[0]:.2f}, the only pair of heads in different layers."
    return (f"The strongest {name}-composition of the {len(pairs)} head pairs is {pair} {pairs[0]:.2f} (the next "
            f"pair scores {pairs[1]:.2f}, the median pair {float(np.median(pairs)):.2f}).")


def pair_rank(scores, score: float) -> str:
    """Where a pair scoring `score` ranks among the chart's pairs: 'the strongest pair' or '3rd of 6 pairs'."""
    pairs = later_pair_scores(scores)
    rank = 1 + int(np.sum(pairs > score + 1e-9))
    if rank == 1:
        return "the strongest pair"
    suffix = "th" if 10 <= rank % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(rank % 10, "th")
    return f"{rank}{suffix} strongest of {len(pairs)} pairs"
