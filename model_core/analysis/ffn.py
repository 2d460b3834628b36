"""Feed-forward neurons: activation distributions, sparsity, dead neurons, what excites them."""
from dataclasses import dataclass

import numpy as np

from model_core.model.cache import ActivationCache


@dataclass
class FFNStats:
    pre_hist: np.ndarray  # [bins] counts of pre-activation values
    pre_edges: np.ndarray  # [bins+1]
    post_hist: np.ndarray  # [bins] counts of post-activation values
    post_edges: np.ndarray  # [bins+1]
    fraction_active: np.ndarray  # [d_mlp] share of positions where the neuron's input is > 0
    dead: int  # neurons never active on this text
    layer_sparsity: np.ndarray  # [L] share of (position, neuron) pairs that are inactive, per layer


def _active(cache: ActivationCache, layer: int) -> np.ndarray:
    """[N, d_mlp] bool: the non-linearity is 'on' (input > 0: relu/gelu pass it, the swiglu gate opens)."""
    pre = cache["pre", layer].numpy()
    return pre.reshape(-1, pre.shape[-1]) > 0


def ffn_statistics(cache: ActivationCache, layer: int, bins: int = 60) -> FFNStats:
    """Histograms and sparsity for one layer; sparsity for all layers."""
    if ("pre", 0) not in cache:
        raise ValueError("this model is attention-only: it has no feed-forward neurons to inspect.")
    pre, post = cache["pre", layer].float().numpy().ravel(), cache["post", layer].float().numpy().ravel()
    pre_hist, pre_edges = np.histogram(pre, bins=bins)
    post_hist, post_edges = np.histogram(post, bins=bins)
    active = _active(cache, layer)
    fraction = active.mean(0).astype(np.float32)
    sparsity = np.array([1.0 - _active(cache, L).mean() for L in range(cache.n_layers)], dtype=np.float32)
    return FFNStats(pre_hist, pre_edges, post_hist, post_edges, fraction, int((fraction == 0).sum()), sparsity)


def top_activating_positions(post: np.ndarray, neuron: int, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """post [T, d_mlp] activations over a text -> (positions, values) of the k largest for one neuron."""
    values = post[:, neuron]
    order = np.argsort(-values, kind="stable")[:k]
    return order, values[order]
