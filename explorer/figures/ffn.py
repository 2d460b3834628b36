"""Feed-forward (MLP) neurons: activation histograms, sparsity and dead neurons, what excites a neuron."""
import numpy as np

from explorer.common.controls import TOP_TOKENS_HEADERS  # noqa: F401  (the top-activation rows fit them)
from explorer.figures.common import (
    BLUE,
    GREY,
    ORANGE,
    RED,
    WIDE_CHART,
    compact,
    histogram_pair_figure,
    style_figure,
    top_legend,
)
from explorer.figures.plain import Figure, bar, scatter, subplots


def ffn_histograms_figure(pre_hist, pre_edges, post_hist, post_edges, layer: int,
                          activation_name: str = "GELU") -> Figure:
    """Histogram counts [bins] and edges [bins+1] before / after the non-linearity, side by side."""
    panels = [(pre_hist, pre_edges, "FFN input (pre-activation)"),
              (post_hist, post_edges, f"after {activation_name}")]
    return histogram_pair_figure(panels, f"Layer {layer} · FFN activation values", "activation value")


def neuron_sparsity_figure(fraction_active, layer_sparsity, layer: int) -> Figure:
    """fraction_active [M] per neuron and layer_sparsity [L] (share inactive) -> how often each neuron is active,
    dead ones (never active) marked red, and beside it each layer's mean of those bars (1 - layer_sparsity)."""
    fraction = np.asarray(fraction_active, dtype=np.float32)  # not rounded: a rare neuron must not read as dead
    dead = np.flatnonzero(fraction == 0)
    active = 1 - compact(layer_sparsity, 3)
    fig = subplots(rows=1, cols=2, column_widths=[0.78, 0.22], horizontal_spacing=0.08,
                   subplot_titles=["", "mean active share per layer"])
    fig.add_trace(bar(x=np.arange(len(fraction)), y=fraction, name="active neuron", marker_color=BLUE,
                      marker_line_width=0, hovertemplate="neuron %{x}<br>active at %{y:.1%}<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(scatter(x=dead, y=np.zeros(len(dead)), mode="markers", name="dead neuron (never active)",
                          marker=dict(color=RED, symbol="x", size=9), cliponaxis=False,
                          hovertemplate="neuron %{x}: never active (dead)<extra></extra>"), row=1, col=1)
    fig.add_trace(bar(x=[f"L{i}" for i in range(len(active))], y=active, showlegend=False, width=0.7,
                      marker_color=[ORANGE if i == layer else GREY for i in range(len(active))],
                      hovertemplate="%{x}: a neuron is active at %{y:.0%} of positions on average<extra></extra>"),
                  row=1, col=2)
    fig.update_xaxes(title_text="neuron index", row=1, col=1)
    fig.update_xaxes(title_text="layer", type="category", row=1, col=2)
    fig.update_yaxes(title_text="fraction of positions active", range=[0, 1.02], row=1, col=1)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=2)
    title = (f"Layer {layer} · FFN neurons: {len(dead)} of {len(fraction)} dead (red ×); mean active share "
             f"{active[layer]:.0%} (orange bar)")
    return style_figure(fig, title, height=400, chart_width=WIDE_CHART, bargap=0, legend=top_legend(), margin=dict(t=100))


def top_tokens_table(positions, values, tokens_in_context: list[str], window: int = 6) -> list[list]:
    """Positions [k] and activations [k] of a neuron's top hits -> rows with a context snippet each.

    The snippet shows up to `window` tokens before the hit and 2 after; the hit itself is in [brackets]."""
    rows = []
    for rank, (pos, value) in enumerate(zip(np.asarray(positions).tolist(), np.asarray(values).tolist()), 1):
        before = "".join(tokens_in_context[max(0, pos - window):pos])
        after = "".join(tokens_in_context[pos + 1:pos + 3])
        rows.append([rank, f"{pos}:{tokens_in_context[pos]}", round(float(value), 3),
                     f"{before}[{tokens_in_context[pos]}]{after}"])
    return rows

