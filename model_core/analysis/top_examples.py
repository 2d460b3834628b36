"""Examples from the whole text: for every FFN neuron and every head, the k places in a token split that
excite it most, found in one pass; and each neuron's firing rate over the same pass.

The split is cut into consecutive windows of block_size tokens (each position sees the context of its own
window). A neuron's strength at a position is its activation (hook_post). A head's strength is the attention
weight of a query to a key; the first key of each window (where heads park unused attention, the sink) and
queries with fewer than HEAD_MIN_CONTEXT tokens before them (any weight is large when there are 3 keys) are
left out."""
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch

from model_core.analysis.interruptible import between_batches

TOP_K = 10
HEAD_MIN_CONTEXT = 8  # queries need this many earlier tokens in their window to count
BATCH_TOKENS = 8192  # tokens per forward pass: big enough for fast matmuls, small enough for memory


@dataclass
class TopExamples:
    n_tokens: int  # positions in the split
    neuron_values: Optional[np.ndarray]  # [L, M, k] float32, largest first (None: attention-only model)
    neuron_positions: Optional[np.ndarray]  # [L, M, k] int64 positions in the split
    fire_counts: Optional[np.ndarray]  # [L, M] int64 positions where the neuron's input is > 0
    head_values: np.ndarray  # [L, H, k] float32 attention weights, largest first
    head_queries: np.ndarray  # [L, H, k] int64 query positions in the split
    head_keys: np.ndarray  # [L, H, k] int64 key positions in the split
    seconds: float  # how long the pass took

    @property
    def firing_rate(self) -> Optional[np.ndarray]:
        """[L, M] share of positions where each neuron fires (input > 0)."""
        return None if self.fire_counts is None else self.fire_counts / max(self.n_tokens, 1)

    @property
    def nbytes(self) -> int:
        arrays = (self.neuron_values, self.neuron_positions, self.fire_counts, self.head_values, self.head_queries,
                  self.head_keys)
        return sum(a.nbytes for a in arrays if a is not None)


def merge_top(values: torch.Tensor, index: torch.Tensor, new_values: torch.Tensor, new_index: torch.Tensor,
              k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep the k largest of two (values, index) sets along dim 0. Ties keep the earlier position."""
    all_values, all_index = torch.cat([values, new_values]), torch.cat([index, new_index])
    order = torch.topk(all_values, min(k, len(all_values)), dim=0).indices
    return all_values.gather(0, order), all_index.gather(0, order)


def head_candidates(pattern: torch.Tensor, fresh: torch.Tensor, min_context: int) -> torch.Tensor:
    """[b, H, T, T] attention -> the same with excluded cells at -1: the sink key, short-context queries, the
    future, and queries not fresh (fresh [b, T]: not already seen in an earlier window)."""
    T = pattern.shape[-1]
    keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
    keep[:, 0] = False
    keep[: min(min_context, T - 1)] = False
    keep = keep & fresh[:, None, :, None]  # [b, 1, T, T]
    return pattern.masked_fill(~keep, -1.0)


class _Running:
    """The running top-k of one layer's neurons and heads while the windows stream past."""

    def __init__(self, k: int, n_neurons: int, n_heads: int):
        self.k = k
        self.neuron = (torch.full((0, n_neurons), -torch.inf), torch.zeros((0, n_neurons), dtype=torch.long))
        self.head = (torch.full((0, n_heads), -torch.inf), torch.zeros((0, n_heads), dtype=torch.long))
        self.fires = torch.zeros(n_neurons, dtype=torch.int64)

    def add_neurons(self, post: torch.Tensor, pre: torch.Tensor, positions: torch.Tensor) -> None:
        """post, pre [N, M]; positions [N] (position in the split of each row)."""
        top = torch.topk(post, min(self.k, len(post)), dim=0)
        self.neuron = merge_top(*self.neuron, top.values, positions[top.indices], self.k)
        self.fires += torch.sum(pre > 0, dim=0, dtype=torch.int32)  # int32: twice as fast as the default

    def add_heads(self, pattern: torch.Tensor, window_starts: torch.Tensor, fresh: torch.Tensor,
                  min_context: int) -> None:
        """pattern [b, H, T, T]; window_starts [b]; fresh [b, T] queries not seen in an earlier window."""
        b, H, T, _ = pattern.shape
        cells = head_candidates(pattern, fresh, min_context).permute(0, 2, 3, 1).reshape(-1, H)  # [b*T*T, H]
        top = torch.topk(cells, min(self.k, len(cells)), dim=0)
        window, query, key = top.indices // (T * T), top.indices // T % T, top.indices % T
        encoded = (window_starts[window] + query) * T + (query - key)  # query position * T + distance
        self.head = merge_top(*self.head, top.values, encoded, self.k)


@torch.inference_mode()
def top_examples(model, ids: torch.Tensor, k: int = TOP_K, progress: Optional[Callable[[float], None]] = None,
                 min_context: int = HEAD_MIN_CONTEXT, window: Optional[int] = None,
                 batch_tokens: int = BATCH_TOKENS) -> TopExamples:
    """One pass over ids (a 1-D token split): the top-k places of every neuron and head. window: tokens per
    window (default block_size); batch_tokens: tokens per forward pass (a large model's activations of 8,192
    tokens would be gigabytes)."""
    start_time = time.perf_counter()
    cfg = model.cfg
    T = min(window or cfg.block_size, len(ids))
    if T < 2:
        raise ValueError(f"the text has {len(ids)} tokens: at least 2 are needed to look for examples.")
    has_ffn = not cfg.attn_only
    running = [_Running(k, cfg.d_mlp if has_ffn else 0, cfg.n_heads) for _ in range(cfg.n_layers)]
    names = {f"blocks.{L}.attn.hook_pattern" for L in range(cfg.n_layers)}
    if has_ffn:
        names |= {f"blocks.{L}.mlp.hook_{h}" for L in range(cfg.n_layers) for h in ("pre", "post")}
    n_windows = len(ids) // T  # the last incomplete window is covered by one more window ending at the end
    starts = torch.tensor(sorted(set(list(range(0, n_windows * T, T)) + [len(ids) - T])))
    per_batch = max(1, batch_tokens // T)
    for first in range(0, len(starts), per_batch):
        between_batches()
        batch_starts = starts[first: first + per_batch]
        windows = torch.stack([ids[s: s + T] for s in batch_starts.tolist()]).long()  # [b, T]
        _, cache = model.run_with_cache(windows, names_filter=names)
        fresh = _fresh_positions(batch_starts, T, starts)  # [b, T] not already seen in an earlier window
        positions = (batch_starts[:, None] + torch.arange(T)).reshape(-1)  # [b*T]
        flat = fresh.reshape(-1)
        for L, run in enumerate(running):
            if has_ffn:
                post, pre = cache["post", L].reshape(-1, cfg.d_mlp), cache["pre", L].reshape(-1, cfg.d_mlp)
                run.add_neurons(post[flat], pre[flat], positions[flat])
            run.add_heads(cache["pattern", L].float(), batch_starts, fresh, min_context)
        if progress is not None:
            progress(min(1.0, (first + len(batch_starts)) / len(starts)))
    return _collect(running, len(ids), T, has_ffn, time.perf_counter() - start_time)


def _fresh_positions(batch_starts: torch.Tensor, T: int, all_starts: torch.Tensor) -> torch.Tensor:
    """[b, T] bool: False for the positions of the final, overlapping window that an earlier window covered."""
    fresh = torch.ones(len(batch_starts), T, dtype=torch.bool)
    if len(all_starts) > 1 and batch_starts[-1] == all_starts[-1]:
        overlap = int(all_starts[-2] + T - all_starts[-1])
        fresh[-1, :max(overlap, 0)] = False
    return fresh


def _collect(running: list, n_tokens: int, T: int, has_ffn: bool, seconds: float) -> TopExamples:
    stack = lambda pairs, i: torch.stack([p[i].T for p in pairs]).numpy()  # [L, units, k]
    heads = [r.head for r in running]
    encoded = stack(heads, 1)
    query, distance = encoded // T, encoded % T
    neurons = [r.neuron for r in running]
    return TopExamples(
        n_tokens=n_tokens,
        neuron_values=stack(neurons, 0).astype(np.float32) if has_ffn else None,
        neuron_positions=stack(neurons, 1) if has_ffn else None,
        fire_counts=torch.stack([r.fires for r in running]).numpy() if has_ffn else None,
        head_values=stack(heads, 0).astype(np.float32),
        head_queries=query,
        head_keys=query - distance,
        seconds=seconds,
    )
