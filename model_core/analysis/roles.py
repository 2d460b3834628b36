"""The head report card: role scores measured on attention patterns, and one label per head.

Sink-aware: a head may park attention on the first token (an "attention sink") when it has nothing to do.
Every role score is therefore the share of the attention *left after the sink* that goes to the role's
target keys, pooled over queries so that each query weighs by the mass it has left: a query that put 99%
on the sink hardly counts, instead of counting as a zero. A head whose non-sink mass is small is labelled
"resting on the sink" rather than given a role it barely plays.

Patterns are [..., batch, query, key] (e.g. [layer, head, batch, T, T]); tokens are [batch, T]."""
from dataclasses import dataclass

import numpy as np

LOCAL_WINDOW = 4  # "local" = the current token and the 3 before it
SINK_REST = 0.7  # a head giving the first token more than this share is resting on the sink
ROLE_MIN = 0.4  # a specific role needs at least this share of the non-sink attention
LOCAL_MIN = 0.6  # a local head puts at least this share within the last LOCAL_WINDOW tokens
BROAD_MIN = 0.5  # a broad head's entropy is at least this share of its maximum; below it a head is "focused"

# The specific roles, in the order they win ties.
SPECIFIC_ROLES = ("induction", "previous token", "duplicate token", "self")
ROLE_LABELS = SPECIFIC_ROLES + ("local", "focused", "broad", "resting on the sink")


def target_share(pattern: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Share of the non-sink attention that lands on target keys, pooled over the queries that have a target.

    pattern [..., B, T, T]; target [B, T, T] bool (key 0, the sink, never counts) -> [...]"""
    p = np.asarray(pattern, dtype=np.float64)
    target = np.broadcast_to(np.asarray(target, dtype=bool), p.shape[-3:]).copy()
    target[..., 0] = False
    has_target = target.any(-1)  # [B, T] queries that can play the role at all
    on_target = (p * target).sum(-1)  # [..., B, T]
    non_sink = 1.0 - p[..., 0]  # [..., B, T]
    num = (on_target * has_target).sum((-2, -1))
    den = (non_sink * has_target).sum((-2, -1))
    return np.divide(num, den, out=np.zeros_like(num), where=den > 1e-9)


def offset_target(B: int, T: int, lo: int, hi: int, min_query: int = 0) -> np.ndarray:
    """[B, T, T] bool: keys k with lo <= q - k <= hi, for queries q >= min_query."""
    q, k = np.arange(T)[:, None], np.arange(T)[None, :]
    mask = (q - k >= lo) & (q - k <= hi) & (q >= min_query)
    return np.broadcast_to(mask, (B, T, T))


def duplicate_target(tokens: np.ndarray) -> np.ndarray:
    """[B, T] ids -> [B, T, T] bool: earlier keys holding the same token as the query."""
    t = np.asarray(tokens)
    T = t.shape[-1]
    earlier = np.tril(np.ones((T, T), dtype=bool), k=-1)
    return (t[:, :, None] == t[:, None, :]) & earlier


def induction_target(tokens: np.ndarray) -> np.ndarray:
    """[B, T] ids -> [B, T, T] bool: keys k < q right after an earlier occurrence of the query's token
    (ids[k - 1] == ids[q]): where an induction head looks to predict 'what came next last time'."""
    t = np.asarray(tokens)
    B, T = t.shape
    target = np.zeros((B, T, T), dtype=bool)
    target[:, :, 1:] = t[:, :, None] == t[:, None, :-1]  # key k+1 follows key k
    return target & np.tril(np.ones((T, T), dtype=bool), k=-1)


def sink_share(pattern: np.ndarray) -> np.ndarray:
    """Mean attention on the first token over queries >= 1 (query 0 has no choice). [..., B, T, T] -> [...]"""
    p = np.asarray(pattern, dtype=np.float64)
    return p[..., 1:, 0].mean((-2, -1)) if p.shape[-1] > 1 else np.zeros(p.shape[:-3])


def breadth_bits(pattern: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(entropy in bits of the non-sink attention, its maximum): both pooled over queries >= 2 weighted by
    their non-sink mass; the maximum is what spreading evenly over every earlier non-sink key would give."""
    p = np.asarray(pattern, dtype=np.float64)[..., 2:, 1:]  # queries >= 2 have at least 2 non-sink keys
    if p.shape[-2] == 0:
        zeros = np.zeros(p.shape[:-3])
        return zeros, zeros
    mass = p.sum(-1)  # [..., B, q]
    rest = np.divide(p, mass[..., None], out=np.zeros_like(p), where=mass[..., None] > 1e-12)
    entropy = -(rest * np.log2(np.where(rest > 0, rest, 1.0))).sum(-1)
    maximum = np.log2(np.arange(2, p.shape[-1] + 1))  # query q sees q non-sink keys
    total = mass.sum((-2, -1))
    weighted = lambda x: np.divide((x * mass).sum((-2, -1)), total, out=np.zeros_like(total), where=total > 1e-12)
    return weighted(entropy), weighted(np.broadcast_to(maximum, mass.shape))


def text_scores(pattern: np.ndarray) -> dict[str, np.ndarray]:
    """Scores measured on windows of ordinary text. pattern [..., B, T, T] -> {name: [...]}"""
    B, T = pattern.shape[-3], pattern.shape[-1]
    entropy, maximum = breadth_bits(pattern)
    return {
        "previous token": target_share(pattern, offset_target(B, T, 1, 1, min_query=2)),
        "self": target_share(pattern, offset_target(B, T, 0, 0, min_query=1)),
        # only queries with twice the window behind them: for earlier ones any head looks "local"
        "local": target_share(pattern, offset_target(B, T, 0, LOCAL_WINDOW - 1, min_query=2 * LOCAL_WINDOW)),
        "sink": sink_share(pattern),
        "breadth": entropy,
        "breadth max": maximum,
    }


def repeat_scores(pattern: np.ndarray, tokens: np.ndarray) -> dict[str, np.ndarray]:
    """Scores measured on a random sequence repeated twice. pattern [..., B, T, T], tokens [B, T]."""
    return {"induction": target_share(pattern, induction_target(tokens)),
            "duplicate token": target_share(pattern, duplicate_target(tokens)),
            "repeat sink": sink_share(pattern)}


def prompt_scores(pattern: np.ndarray, ids) -> dict[str, np.ndarray]:
    """Every score measured on one prompt (the text and its own repeats): what the Attention tab's captions
    name. pattern [..., T, T], ids [T] -> {name: [...]}"""
    p = np.asarray(pattern)[..., None, :, :]  # one sequence: [..., 1, T, T]
    return {**text_scores(p), **repeat_scores(p, np.asarray(ids)[None])}


@dataclass
class HeadRole:
    layer: int
    head: int
    label: str  # one of ROLE_LABELS
    score: float  # the share that earned the label (for "broad" and "focused": entropy / its maximum)
    sentence: str  # what the head does, for a student


def prompt_roles(pattern: np.ndarray, ids) -> tuple[list[HeadRole], dict[str, np.ndarray]]:
    """(one role per head, the scores behind them) on one prompt: pattern [L, H, T, T], ids [T]."""
    scores = prompt_scores(pattern, ids)
    return head_roles(scores), scores


def head_roles(scores: dict[str, np.ndarray]) -> list[HeadRole]:
    """One label per head from text_scores + repeat_scores ({name: [L, H]}), in layer-major order."""
    n_layers, n_heads = np.shape(scores["sink"])
    return [head_role_of(scores, layer, head) for layer in range(n_layers) for head in range(n_heads)]


def head_role_of(scores: dict[str, np.ndarray], layer: int, head: int) -> HeadRole:
    at = {name: float(np.asarray(value)[layer, head]) for name, value in scores.items()}
    # idle on plain text, wakes up and copies on repeats (a head that stays on the sink there too is resting: the
    # crumbs it leaves elsewhere may land on induction targets; snapshots older than "repeat sink" lack it)
    wakes = at.get("induction", 0.0) >= ROLE_MIN and at.get("repeat sink", 0.0) < SINK_REST
    if at["sink"] >= SINK_REST and wakes:
        label, score = "induction", at["induction"]
    elif at["sink"] >= SINK_REST:
        label, score = "resting on the sink", at["sink"]
    else:
        label, score = max(((r, at[r]) for r in SPECIFIC_ROLES if r in at), key=lambda item: item[1])
        if score < ROLE_MIN:
            broad = at["breadth"] / at["breadth max"] if at["breadth max"] > 0 else 0.0
            if at["local"] >= LOCAL_MIN:
                label, score = "local", at["local"]
            else:  # no habit: attention spread widely, or kept on a few tokens no habit explains (a line break)
                label, score = ("broad" if broad >= BROAD_MIN else "focused"), broad
    return HeadRole(layer, head, label, score, role_sentence(label, score, at))


def role_sentence(label: str, score: float, at: dict[str, float]) -> str:
    """One sentence a student understands: what the head does and how strongly."""
    share = f"{score:.0%}"
    rest = f"{1 - at['sink']:.0%}"
    return {
        "induction": f"On a random sequence shown twice, it looks at the token that followed the earlier copy of the "
                     f"current token ({share} of its non-sink attention): it lets the model copy what came next last "
                     "time (an induction head).",
        "previous token": f"It looks at the token just before the current one ({share} of its non-sink attention), "
                          "passing each position its neighbour's identity.",
        "duplicate token": f"It looks back at earlier copies of the current token ({share} of its non-sink "
                           "attention): it tells the model 'this token appeared before'.",
        "self": f"It looks at its own position ({share} of its non-sink attention), passing the current token "
                "on, transformed.",
        "local": f"It spreads its attention over the last {LOCAL_WINDOW} tokens ({share} of its non-sink "
                 "attention), like a short sliding window.",
        "focused": f"It keeps its attention on a few earlier tokens ({at['breadth']:.1f} of at most "
                   f"{at['breadth max']:.1f} bits) that none of the habits above explains (in a play: often the "
                   "last line break).",
        "broad": f"It spreads its attention widely ({at['breadth']:.1f} of at most {at['breadth max']:.1f} bits), "
                 "averaging many earlier tokens; no single habit dominates.",
        "resting on the sink": f"It puts {share} of its attention on the first token, a resting place (an "
                               f"'attention sink'): with only {rest} left to spend, it is mostly switched off on "
                               "this text.",
    }[label]
