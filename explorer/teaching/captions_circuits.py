"""Captions of the Heads tab's circuits section, computed from the data."""
import numpy as np


def head_caption(layer: int, head: int, copying: float, self_top: float, qk, names: list[str],
                 positional: str) -> str:
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
    return text + " Both circuits read the embeddings directly (the path through earlier layers is left out)."


def composition_caption(scores, kind: str, links: list, previous: dict, induction: dict, copying) -> str:
    L = scores.shape[0]
    if L < 2:
        return "This model has one layer: no head can read what another head wrote, so there is no composition."
    i = np.unravel_index(int(np.argmax(scores)), scores.shape)
    name = kind.upper()
    text = (f"The strongest {name}-composition is L{i[0]}·H{i[1]} → L{i[2]}·H{i[3]} ({float(scores[i]):.2f}; "
            f"random matrices of this size score about {random_baseline(scores):.2f}).")
    if links:
        a = links[0]
        text += (f" The induction circuit: previous-token head L{a[0]}·H{a[1]} → induction head L{a[2]}·H{a[3]} "
                 f"(K-composition {a[4]:.2f}): the induction head's key reads which token came before, written by "
                 "the previous-token head.")
    elif induction:
        text += " Induction heads were found, but no previous-token head in an earlier layer."
    else:
        text += " No induction head scores 0.3 or more on the repeated probe."
    best = np.unravel_index(int(np.argmax(copying)), copying.shape)
    return text + f" The head that copies most is L{best[0]}·H{best[1]} (copying score {float(copying[best]):+.2f})."


def random_baseline(scores) -> float:
    """The median of the scores that exist: most head pairs do not compose, so this is their chance level."""
    values = np.asarray(scores)[np.asarray(scores) > 0]
    return float(np.median(values)) if values.size else 0.0
