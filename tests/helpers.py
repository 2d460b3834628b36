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
