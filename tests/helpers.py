"""Tiny random models shared by the tests (a few hundred to a few thousand parameters)."""
import torch

from model_core import GPT, GPTConfig


def tiny_config(**overrides) -> GPTConfig:
    base = dict(vocab_size=11, block_size=8, d_model=8, n_heads=2, n_layers=2)
    base.update(overrides)
    return GPTConfig(**base)


def tiny_model(seed: int = 0, **overrides) -> GPT:
    torch.manual_seed(seed)
    return GPT(tiny_config(**overrides)).eval()


def tokens(model: GPT, T: int = 7, batch: int = 2, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.cfg.vocab_size, (batch, T), generator=g)
