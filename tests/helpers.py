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


LLAMA = dict(norm="rmsnorm", positional="rope", activation="swiglu", bias=False)  # SmolLM2's kind of model


def grid_weights(shape, seed: int) -> torch.Tensor:
    """Weights on a 4-bit grid per group of 32 along the input, as a Q4_1 GGUF file holds them: low + step * q,
    every group using q = 0 and q = 15 (llama.cpp puts its smallest and largest weight there)."""
    g = torch.Generator().manual_seed(seed)
    groups = shape[1] // 32
    q = torch.randint(0, 16, (shape[0], groups, 32), generator=g)
    q[..., 0], q[..., 1] = 0, 15
    low = -torch.rand(shape[0], groups, 1, generator=g) * 0.2
    step = torch.rand(shape[0], groups, 1, generator=g) * 0.02 + 0.001
    return (low + step * q).view(shape)


def frozen_grid_model(**kind) -> GPT:
    """A tiny frozen model (a pretrained one's stand-in) whose linear weights, all but the unembedding, sit on a
    4-bit grid, so that every generation path applies."""
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=96, block_size=32, d_model=64, n_heads=4, n_kv_heads=2, n_layers=2, d_mlp=128,
                    **(kind or LLAMA))
    model = GPT(cfg).eval()
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            if p.dim() == 2 and "embed" not in name:
                p.copy_(grid_weights(p.shape, i))
    return model.freeze()


def tokens(model: GPT, T: int = 7, batch: int = 2, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.cfg.vocab_size, (batch, T), generator=g)


def assert_plotly_would_send_the_same(fig) -> None:
    """Our figures skip plotly.py's validation (explorer.figures.plain): plotly.py, given the same figure, must
    accept every property and send Plotly.js the same data and layout (the template aside: ours keeps the trace
    kinds the figure uses)."""
    import json

    import plotly.graph_objects as go

    ours = json.loads(fig.to_json())
    theirs = json.loads(go.Figure(fig.to_plotly_json()).to_json())  # raises on any unknown property
    assert ours["layout"].pop("template")["layout"] == theirs["layout"].pop("template")["layout"]
    assert ours == theirs
