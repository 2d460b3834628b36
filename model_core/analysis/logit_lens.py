"""Logit lens: decode the residual stream after every layer as if it were the last."""
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from model_core.model.cache import ActivationCache

ROWS_AT_ONCE = 256  # streams decoded per matrix product: [256, V] probabilities are 50 MB for a 49k vocabulary


@dataclass
class LogitLens:
    top_ids: np.ndarray  # [L+1, T, k] token ids, best first; row 0 = embeddings, row L = final output
    top_probs: np.ndarray  # [L+1, T, k] their probabilities


@torch.no_grad()
def logit_lens(model, cache: ActivationCache, k: int = 5, last: Optional[int] = None) -> LogitLens:
    """Top-k next-token predictions at every layer and position (stream -> final norm -> unembedding);
    last: only the last `last` positions (T becomes last)."""
    L = model.cfg.n_layers
    streams = [cache["blocks.0.hook_resid_pre"]] + [cache["resid_post", layer] for layer in range(L)]
    x = torch.stack([s[0] for s in streams]).float()  # [L+1, T, D] (a cache may be kept in float16)
    x = x[:, -last:] if last else x
    rows = x.reshape(-1, x.shape[-1]).to(next(model.parameters()).device)  # [(L+1)·T, D]
    tops = [_top_k(model, rows[i: i + ROWS_AT_ONCE], k) for i in range(0, len(rows), ROWS_AT_ONCE)]
    ids, probs = (torch.cat(parts).reshape(*x.shape[:2], -1).cpu().numpy() for parts in zip(*tops))
    return LogitLens(ids, probs)


def _top_k(model, x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x [N, D] residual streams -> (indices, probabilities) [N, k] of their likeliest next tokens."""
    probs = torch.softmax(model.unembed(model.ln_final.norm(x)).float(), dim=-1)  # [N, V]
    top = probs.topk(min(k, probs.size(-1)), dim=-1)
    return top.indices, top.values
