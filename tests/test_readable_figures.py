"""Charts stay readable at a real model's size: every part of the logit split has its own labelled row (SmolLM2's 30
layers), and index:token axes never draw labels over each other (Plotly's rules for category axes, applied to the
figures' layouts; tests/test_readable_browser.py looks at the drawn page)."""
import numpy as np

import explorer.figures as F
from explorer.figures.attribution import PART_SERIES, attribution_figure
from explorer.figures.common import index_labels
from explorer.teaching.captions_attribution import attribution_caption
from tests.helpers import assert_plotly_would_send_the_same

rng = np.random.default_rng(7)
LONG_TOKENS = ["The", "␣quick", "␣brownish", "␣characteristically", "␣fox", "␣jumps", "␣over", "␣the", "␣lazy",
               "␣dog", "!", "␣And"]


def smollm2_parts(n_layers: int = 30) -> list[tuple[str, float]]:
    """Parts shaped like SmolLM2's: the largest is layer 23's attention, beside a small layer 23 MLP."""
    parts = [("embeddings", 0.3)]
    for layer in range(n_layers):
        parts += [(f"layer {layer} attention", float(rng.normal(0, 0.3))), (f"layer {layer} MLP",
                                                                              float(rng.normal(0, 0.3)))]
    parts[1 + 2 * 23] = ("layer 23 attention", 1.92)
    parts[2 + 2 * 23] = ("layer 23 MLP", 0.05)
    return parts + [("biases", 0.0)]


def drawn_every_label(fig, axis: str, n_categories: int) -> bool:
    """Plotly.js skips category tick labels closer than 1.2 × their font (axes.prepTicks: nticks = length /
    bigFont(size)); the axis's length is the figure's height less its margins, times its domain."""
    layout = fig.layout
    margin = layout.margin
    domain = layout[axis].get("domain", [0, 1])
    length = (layout.height - margin["t"] - margin["b"]) * (domain[1] - domain[0])
    font = layout[axis].get("tickfont", {}).get("size", layout.font.size)
    return length / n_categories >= round(1.2 * font)


def test_every_part_of_a_30_layer_split_has_its_own_labelled_row():
    parts = smollm2_parts()
    heads = rng.normal(0, 0.1, size=(30, 9))
    fig = attribution_figure(heads, parts, "the logit of ␣Paris")
    bars = [t for t in fig.data if t.type == "bar"]
    rows = ["embeddings", *[f"layer {i}" for i in range(30)], "biases"]
    assert fig.layout.yaxis2.categoryarray == rows and drawn_every_label(fig, "yaxis2", len(rows))
    by_series = {t.name: dict(zip(t.y, t.customdata)) for t in bars}
    assert set(by_series) == set(PART_SERIES)
    assert all(by_series["attention (all heads)"][f"layer {i}"] == f"layer {i} attention" for i in range(30))
    assert all(by_series["MLP"][f"layer {i}"] == f"layer {i} MLP" for i in range(30))
    assert sum(len(t.x) for t in bars) == len(parts)  # every part drawn once
    caption = attribution_caption("The logit of ␣Paris", 2.0, 2.0, heads, parts)
    assert "the largest part overall is layer 23 attention (+1.92)" in caption
    attention = next(t for t in bars if t.name == "attention (all heads)")
    biggest = int(np.argmax(attention.x))
    assert attention.y[biggest] == "layer 23" and attention.customdata[biggest] == "layer 23 attention"
    # attention sits above the MLP in its row (the y axis runs top-down), neither over the other
    (a_off, a_width, _), (m_off, _, _) = PART_SERIES["attention (all heads)"], PART_SERIES["MLP"]
    assert a_off + a_width <= m_off + 1e-9
    assert_plotly_would_send_the_same(fig)


def test_an_attention_only_model_gets_full_width_bars():
    parts = [("embeddings", 0.1), ("layer 0 attention", 0.5), ("layer 1 attention", -0.2), ("biases", 0.0)]
    fig = attribution_figure(np.zeros((2, 2)), parts, "x")
    attention = next(t for t in fig.data if t.name == "attention (all heads)")
    assert attention.width == PART_SERIES["embeddings, biases"][1] and list(attention.y) == ["layer 0", "layer 1"]


def index_token_axes() -> list[tuple[str, object, str, list[str]]]:
    """(name, figure, axis key, its labels) for every figure that draws an index:token axis."""
    labels, T = index_labels(LONG_TOKENS), len(LONG_TOKENS)
    pattern = np.tril(rng.random((T, T)))
    pattern /= pattern.sum(-1, keepdims=True)
    stream = rng.normal(size=(3, T, 8))
    return [
        ("attention_head_figure", F.attention_head_figure(pattern, LONG_TOKENS, 0, 0), "xaxis", labels),
        ("attention_head_figure (queries)", F.attention_head_figure(pattern, LONG_TOKENS, 0, 0), "yaxis", labels),
        ("query_attention_bars_figure", F.query_attention_bars_figure(pattern, LONG_TOKENS, 5), "xaxis", labels),
        ("token_index_figure", F.token_index_figure(np.arange(T), LONG_TOKENS), "xaxis", labels),
        ("residual_heatmap_figure", F.residual_heatmap_figure(stream, LONG_TOKENS), "xaxis", labels),
        ("update_vs_residual_figure", F.update_vs_residual_figure(rng.random(T), rng.random(T), LONG_TOKENS, 0),
         "xaxis", labels),
    ]


def test_index_token_axes_turn_their_labels_and_hover_keeps_them_whole():
    """An x axis turns its labels to the first angle at which none overlap (autotickangles, ending upright: there
    Plotly's spacing rule for category axes alone keeps them apart), no axis pins an angle, margins grow to fit,
    and the categories (what hover shows) are the whole index:token labels."""
    for name, fig, key, labels in index_token_axes():
        axis = fig.layout[key]
        assert axis["type"] == "category" and axis["automargin"] and "tickangle" not in axis, name
        if key.startswith("x"):
            assert list(axis["autotickangles"]) == [0, -45, -90], name
        trace = fig.data[0]
        assert list(trace.x if key.startswith("x") else trace.y) == labels, name
        assert_plotly_would_send_the_same(fig)
