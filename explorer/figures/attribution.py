"""Which part wrote the prediction: direct logit attribution (a heatmap of heads, bars of layers, one head split
by the position it read from) and activation patching (how much of the clean answer each patch restores).
numpy in, Plotly out."""
import numpy as np

from explorer.figures.common import (
    BLUE,
    DIVERGING_SCALE,
    GREY,
    RED,
    SMALL_FONT,
    compact,
    position_axis,
    style_figure,
    symmetric_range,
)
from explorer.figures.plain import Figure, bar, heatmap, subplots

TEXT_CELLS = 400  # heatmaps with more cells than this show no numbers in the cells (hover still does)


def attribution_figure(heads, layer_parts: list[tuple[str, float]], what: str) -> Figure:
    """Left: [L, H] each head's part of the logit (difference); right: one bar per part in reading order
    (embeddings, each layer's attention and MLP, biases). Red adds to `what`, blue takes away."""
    heads = np.asarray(heads, dtype=np.float64)
    n_layers, n_heads = heads.shape
    fig = subplots(rows=1, cols=2, column_widths=[0.5, 0.5], horizontal_spacing=0.3,
                   subplot_titles=["each head", "each part, in reading order"])
    reach = symmetric_range(heads)
    cells = dict(text=[[f"{v:+.2f}" for v in row] for row in heads], texttemplate="%{text}",
                 textfont=dict(size=SMALL_FONT)) if heads.size <= TEXT_CELLS else {}
    fig.add_trace(heatmap(
        z=compact(heads), x=[f"head {h}" for h in range(n_heads)], y=[f"layer {layer}" for layer in range(n_layers)],
        zmin=-reach, zmax=reach, colorscale=DIVERGING_SCALE, **cells,
        hovertemplate="%{y} · %{x}<br>part of the logit %{z:+.3f}<extra></extra>",
        colorbar=dict(title=dict(text="logit part", side="right"), thickness=14, x=0.37),  # beside the heatmap
    ), row=1, col=1)
    names, values = [n for n, _ in layer_parts], np.array([v for _, v in layer_parts], dtype=np.float64)
    fig.add_trace(bar(
        x=compact(values), y=names, orientation="h", showlegend=False,
        marker_color=[RED if v > 0 else BLUE if v < 0 else GREY for v in values],
        hovertemplate="%{y}<br>part of the logit %{x:+.3f}<extra></extra>",
    ), row=1, col=2)
    fig.update_yaxes(autorange="reversed", row=1, col=1)  # layer 0 on top, as the model reads
    fig.update_yaxes(autorange="reversed", type="category", row=1, col=2)
    fig.update_xaxes(title_text="part of the logit", zeroline=True, zerolinecolor="#888", row=1, col=2)
    height = max(360, 130 + max(24 * n_layers, 14 * len(names)))
    return style_figure(fig, f"Who wrote {what}: each part's share of the logit", height, margin=dict(t=90, l=90))


def head_source_figure(values, sources: list[str], head: str, what: str) -> Figure:
    """[p + 1] one head's part split by the position it read from (attention weight × that position's value)."""
    values = np.asarray(values, dtype=np.float64)
    fig = Figure([bar(
        x=list(sources), y=compact(values), marker_color=[RED if v > 0 else BLUE for v in values],
        hovertemplate="read from %{x}<br>part of the logit %{y:+.3f}<extra></extra>",
    )])
    fig.update_xaxes(**position_axis(len(sources), "position the head read from (position:token)"))
    fig.update_yaxes(title_text="part of the logit", zeroline=True, zerolinecolor="#888")
    return style_figure(fig, f"Head {head}'s part of {what}, by the position it read from", 380,
                        margin=dict(t=80, b=90))


def patching_figure(restored, rows: list[str], cols: list[str], title: str, x_title: str, y_title: str) -> Figure:
    """[R, C] share of the clean answer restored by each patch: 0 white (as corrupted), 1 red (as clean)."""
    restored = np.asarray(restored, dtype=np.float64)
    reach = max(1.0, symmetric_range(restored))
    cells = dict(text=[[f"{round(v, 2) + 0.0:.0%}" for v in row] for row in restored], texttemplate="%{text}",
                 textfont=dict(size=SMALL_FONT)) if restored.size <= TEXT_CELLS else {}
    fig = Figure([heatmap(
        z=compact(restored), x=list(cols), y=list(rows), zmin=-reach, zmax=reach, colorscale=DIVERGING_SCALE,
        **cells, hovertemplate="%{y} · %{x}<br>restores %{z:.1%} of the clean answer<extra></extra>",
        colorbar=dict(title=dict(text="restored", side="right"), thickness=14, tickformat=".0%"),
    )])
    fig.update_xaxes(**position_axis(len(cols), x_title) if x_title.startswith("position") else
                     dict(title_text=x_title, type="category"))
    fig.update_yaxes(title_text=y_title, autorange="reversed", type="category")
    return style_figure(fig, title, max(320, 140 + 22 * len(rows)), margin=dict(t=80, l=90, b=90))
