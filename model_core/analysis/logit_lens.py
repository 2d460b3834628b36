"""Logit lens: decode the residual stream after every layer as if it were the last."""
from dataclasses import dataclass

import numpy as np
import torch

from model_core.model.cache import ActivationCache


@dataclass
class LogitLens:
    top_ids: np.ndarray  # [L+1, T, k] token ids, best first; row 0 = embeddings, row L = final output
    top_probs: np.ndarray  # [L+1, T, k] their probabilities


@torch.no_grad()
def logit_lens(model, cache: ActivationCache, k: int = 5) -> LogitLens:
    """Top-k next-token predictions at every layer and position (stream -> final norm -> unembedding)."""
    L = model.cfg.n_layers
    streams = [cache["blocks.0.hook_resid_pre"]] + [cache["resid_post", layer] for layer in range(L)]
    x = torch.stack([s[0] for s in streams]).to(model.embed.weight.device)  # [L+1, T, D]
    probs = torch.softmax(model.unembed(model.ln_final.norm(x)).float(), dim=-1)  # [L+1, T, V]
    top = probs.topk(min(k, probs.size(-1)), dim=-1)
    return LogitLens(top.indices.cpu().numpy(), top.values.cpu().numpy())
