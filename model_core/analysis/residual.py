"""The residual stream: how big it is, and how big the updates written into it are."""
from dataclasses import dataclass

import numpy as np

from model_core.model.cache import ActivationCache


@dataclass
class ResidualStats:
    """All arrays are for one sequence (batch item 0); L layers, T positions."""

    resid_pre: np.ndarray  # [L, T] L2 norm of the stream entering each layer
    resid_mid: np.ndarray  # [L, T] after attention
    resid_post: np.ndarray  # [L, T] after the whole layer
    attn_out: np.ndarray  # [L, T] L2 norm of the attention update
    mlp_out: np.ndarray  # [L, T] L2 norm of the FFN update (zeros for attention-only models)
    resid_var: np.ndarray  # [L, T] variance across d_model of the stream entering each layer
    attn_var: np.ndarray  # [L, T] variance across d_model of the attention output


def _norm(cache: ActivationCache, short: str) -> np.ndarray:
    return cache.stack(short)[:, 0].float().norm(dim=-1).numpy()  # [L, T] (float: a cache may be kept in float16)


def residual_statistics(cache: ActivationCache) -> ResidualStats:
    """Norms and variances of the residual stream and its updates, per layer and position."""
    attn = cache.stack("attn_out")[:, 0].float()  # [L, T, D]
    has_mlp = ("mlp_out", 0) in cache
    return ResidualStats(
        resid_pre=_norm(cache, "resid_pre"),
        resid_mid=_norm(cache, "resid_mid"),
        resid_post=_norm(cache, "resid_post"),
        attn_out=attn.norm(dim=-1).numpy(),
        mlp_out=_norm(cache, "mlp_out") if has_mlp else np.zeros(attn.shape[:2], dtype=np.float32),
        resid_var=cache.stack("resid_pre")[:, 0].float().var(dim=-1, unbiased=False).numpy(),
        attn_var=attn.var(dim=-1, unbiased=False).numpy(),
    )


def residual_stream(cache: ActivationCache) -> np.ndarray:
    """[L+1, T, D]: the stream after the embeddings (row 0) and after each layer (seed 003's heatmap)."""
    first = cache["blocks.0.hook_resid_pre"][0:1].float()  # [1, T, D]
    return np.concatenate([first.numpy(), cache.stack("resid_post")[:, 0].float().numpy()], axis=0)
