"""ActivationCache: activations by hook name, with short-hand lookups."""
from typing import Union

import numpy as np
import torch

Key = Union[str, tuple]


def full_name(key: Key) -> str:
    """'pattern', 0 -> 'blocks.0.attn.hook_pattern'; full names pass through."""
    if isinstance(key, str):
        return key
    short, layer = key
    if short.startswith(("hook_", "blocks.", "ln_final")):
        return short if layer is None else f"blocks.{layer}.{short}"
    for sub in ("attn", "mlp", "ln1", "ln2"):
        if short in _SUB_HOOKS[sub]:
            return f"blocks.{layer}.{sub}.hook_{short}"
    return f"blocks.{layer}.hook_{short}"


_SUB_HOOKS = {
    "attn": {"q", "k", "v", "attn_scores_unmasked", "attn_scores", "pattern", "z"},
    "mlp": {"pre", "post"},
    "ln1": set(),
    "ln2": set(),
}


class ActivationCache:
    """Detached CPU tensors keyed by hook name: cache['pattern', 0], cache.stack('resid_post')."""

    def __init__(self, store: dict[str, torch.Tensor], n_layers: int):
        self.store = store
        self.n_layers = n_layers

    def __getitem__(self, key: Key) -> torch.Tensor:
        name = full_name(key)
        if name not in self.store:
            raise KeyError(f"{name!r} is not in the cache; cached names: {list(self.store)[:6]}...")
        return self.store[name]

    def __contains__(self, key: Key) -> bool:
        return full_name(key) in self.store

    def __len__(self) -> int:
        return len(self.store)

    def keys(self):
        return self.store.keys()

    def items(self):
        return self.store.items()

    def stack(self, short: str) -> torch.Tensor:
        """Stack one activation over layers: [n_layers, ...]."""
        return torch.stack([self[short, layer] for layer in range(self.n_layers)])

    def to_numpy(self) -> dict[str, np.ndarray]:
        return {name: t.float().numpy() for name, t in self.store.items()}
