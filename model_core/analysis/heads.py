"""Per-head statistics of attention patterns: what each head looks at."""
import numpy as np

HEAD_STAT_NAMES = (
    "entropy", "prev_token", "self", "first_token", "mean_distance",
    "entropy_no_sink", "prev_token_no_sink", "self_no_sink", "mean_distance_no_sink",
)


def head_statistics(pattern: np.ndarray) -> dict[str, np.ndarray]:
    """pattern [..., query, key] (e.g. [layer, head, q, k]) -> {stat: array [...]}, averaged over queries.

    entropy is in bits. prev_token, self and first_token skip query 0 (it can only see itself, so it would
    count as 'self' in every head). The *_no_sink versions drop key 0 and renormalise each query's row; the
    rows are then averaged weighted by the mass that remained, so a query that put everything on the first
    token (nothing left to judge) does not count as a zero."""
    p = np.asarray(pattern, dtype=np.float64)
    T = p.shape[-1]
    stats = _pattern_stats(p, first_query=0)
    zeros = np.zeros(p.shape[:-2])
    stats["self"] = np.diagonal(p, axis1=-2, axis2=-1)[..., 1:].mean(-1) if T > 1 else zeros
    stats["first_token"] = p[..., 1:, 0].mean(-1) if T > 1 else zeros
    rest = p[..., 1:, 1:]  # drop key 0 and query 0 (which only sees key 0)
    mass = rest.sum(-1, keepdims=True)  # [..., q, 1] attention left once the sink is dropped
    rest = np.divide(rest, mass, out=np.zeros_like(rest), where=mass > 1e-12)
    no_sink = _pattern_stats(rest, first_query=1, weights=mass[..., 0])
    for name in ("entropy", "prev_token", "self", "mean_distance"):
        stats[f"{name}_no_sink"] = no_sink[name]
    return {name: stats[name].astype(np.float32) for name in HEAD_STAT_NAMES}


def _weighted_mean(values: np.ndarray, weights) -> np.ndarray:
    """Mean over the last axis, weighted (weights [..., n]) or plain (weights None); 0 when nothing weighs."""
    if weights is None:
        return values.mean(-1)
    total = weights.sum(-1)
    return np.divide((values * weights).sum(-1), total, out=np.zeros_like(total), where=total > 1e-12)


def _pattern_stats(p: np.ndarray, first_query: int, weights=None) -> dict[str, np.ndarray]:
    """Stats of a [..., q, k] pattern whose query i is absolute position i + first_query; weights [..., q]
    weight the queries' rows (None: equal)."""
    nq, nk = p.shape[-2], p.shape[-1]
    if nq == 0:
        zeros = np.zeros(p.shape[:-2])
        return {"entropy": zeros, "prev_token": zeros, "self": zeros, "mean_distance": zeros}
    q = np.arange(nq)[:, None] + first_query  # absolute query positions
    k = np.arange(nk)[None, :] + first_query  # absolute key positions
    logp = np.log2(np.where(p > 0, p, 1.0))
    entropy = _weighted_mean(-(p * logp).sum(-1), weights)
    diag = _weighted_mean(np.diagonal(p, axis1=-2, axis2=-1), weights)
    if nq > 1:  # query i's previous token is key i - 1: the first query has none
        below = np.diagonal(p, offset=-1, axis1=-2, axis2=-1)
        prev = _weighted_mean(below, None if weights is None else weights[..., 1:])
    else:
        prev = np.zeros(p.shape[:-2])
    distance = _weighted_mean((p * (q - k).clip(min=0)).sum(-1), weights)
    return {"entropy": entropy, "prev_token": prev, "self": diag, "mean_distance": distance}


def head_role(stats: dict[str, np.ndarray], layer: int, head: int) -> tuple[str, float]:
    """The head's most striking behaviour as (description, share), e.g. ('the previous token', 0.78)."""
    candidates = [
        ("the previous token", float(stats["prev_token"][layer, head])),
        ("itself (the current token)", float(stats["self"][layer, head])),
        ("the first token (an attention sink)", float(stats["first_token"][layer, head])),
    ]
    return max(candidates, key=lambda c: c[1])
