"""Which part wrote the prediction: direct logit attribution (a heatmap of heads, bars of layers, one head split
by the position it read from) and activation patching (how much of the clean answer each patch restores).
numpy in, Plotly out."""
import numpy as np

from explorer.figures.common import (
    BLUE,
    DIVERGING_SCALE,
    FONT_SIZE,
    GREEN,
    GREY,
    PURPLE,
    RED,
    SMALL_FONT,
    TITLE_BAND,
    WIDE_CHART,
    compact,
    position_axis,
    style_figure,
    symmetric_range,
    top_legend,
)
from explorer.figures.plain import Figure, bar, heatmap, subplots

TEXT_CELLS = 400  # heatmaps with more cells than this show no numbers in the cells (hover still does)
PART_AXIS = "part of the logit (above 0 pushes it up, below 0 down)"  # the captions say the same
# PART_AXIS on three lines, for a vertical axis: in one line (460 px at the body font) it ran past a 200 px high
# plot, over the chart's title. Its longest line must stay under the plot's height (PART_PLOT_PX).
PART_AXIS_UPRIGHT = "part of the logit<br>above 0 pushes it up,<br>below 0 down"
PART_PLOT_PX = 230  # the head-source chart's plot height (less what upright position labels take from it)


def attribution_figure(heads, layer_parts: list[tuple[str, float]], what: str) -> Figure:
    """Left: [L, H] each head's part of the logit (difference); right: the parts in reading order, one row per layer
    with its attention (all heads) and its FFN side by side, embeddings above and biases below. Every row is
    labelled (PART_ROW_PX per row). layer_parts: (name, value) as 'embeddings', 'layer N attention', 'layer N FFN',
    'biases'. Red cells add to `what`, blue take away; a bar's direction says the same."""
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
    rows = _part_rows(layer_parts)
    has_mlp = any(kind == "FFN" for _, kind, _ in rows.values())
    for series, (offset, width, color) in PART_SERIES.items():
        found = [(row, name, value) for name, (row, kind, value) in rows.items() if kind == series]
        if not has_mlp:  # attention only: its bars take the whole row
            offset, width = PART_SERIES["embeddings, biases"][:2]
        if found:
            y, names, values = zip(*found)
            fig.add_trace(bar(
                x=compact(values), y=list(y), orientation="h", name=series, offset=offset, width=width,
                marker_color=color, customdata=list(names), legendgroup=series,
                hovertemplate="%{customdata}<br>part of the logit %{x:+.3f}<extra></extra>",
            ), row=1, col=2)
    fig.update_yaxes(autorange="reversed", row=1, col=1)  # layer 0 on top, as the model reads
    order = list(dict.fromkeys(row for row, _, _ in rows.values()))
    fig.update_yaxes(autorange="reversed", type="category", categoryorder="array", categoryarray=order,
                     row=1, col=2)
    fig.update_xaxes(title_text=PART_AXIS, zeroline=True, zerolinecolor="#888", row=1, col=2)
    height = 210 + PART_ROW_PX * max(n_layers, len(order))
    legend = {**top_legend(), "x": 0.62, "y": 1 + 28 / (height - 180)}  # above the subplot title: 28 px up
    return style_figure(fig, f"Who wrote {what}: each part's share of the logit", height, chart_width=WIDE_CHART,
                        margin=dict(t=120, l=90, b=60), legend=legend, bargap=0.15)


PART_ROW_PX = 26  # pixels per row of the parts chart: over 1.2 × the tick font, so Plotly draws every label
PART_SERIES = {  # series -> (offset, width, colour): attention above FFN within a layer's row
    "attention (all heads)": (-0.42, 0.42, PURPLE),
    "FFN": (0.0, 0.42, GREEN),
    "embeddings, biases": (-0.42, 0.84, GREY),
}


def _part_rows(layer_parts: list[tuple[str, float]]) -> dict[str, tuple[str, str, float]]:
    """{part name: (row label, series, value)}: 'layer 3 attention' -> ('layer 3', 'attention (all heads)', v)."""
    rows = {}
    for name, value in layer_parts:
        layer, _, kind = name.rpartition(" ")
        if name.startswith("layer ") and kind in ("attention", "FFN"):
            rows[name] = (layer, "FFN" if kind == "FFN" else "attention (all heads)", float(value))
        else:
            rows[name] = (name, "embeddings, biases", float(value))
    return rows


def head_source_figure(values, sources: list[str], head: str, what: str) -> Figure:
    """[p + 1] one head's part split by the position it read from (attention weight × that position's value)."""
    values = np.asarray(values, dtype=np.float64)
    fig = Figure([bar(
        x=list(sources), y=compact(values), marker_color=[RED if v > 0 else BLUE for v in values],
        hovertemplate="read from %{x}<br>part of the logit %{y:+.3f}<extra></extra>",
    )])
    fig.update_xaxes(**position_axis("position the head read from (position:token)"))
    fig.update_yaxes(title_text=PART_AXIS_UPRIGHT, zeroline=True, zerolinecolor="#888")
    # the left margin holds the title's three lines (1.3 × the font each) beside the tick labels
    left = round(PART_AXIS_UPRIGHT.count("<br>") + 1) * round(1.3 * FONT_SIZE) + 50
    return style_figure(fig, f"Head {head}'s part of {what}, by the position it read from",
                        TITLE_BAND + PART_PLOT_PX + 90, chart_width=WIDE_CHART, margin=dict(t=80, l=left, b=90))


NARROW_CELLS = 20  # more columns than this: a cell is too narrow for "100%", and writes "100" (the colour bar: %)


def restored_text(share: float, sign: str = "%") -> str:
    """A patching cell's number: blank where it rounds to 0 %, so the patches that matter stand out of the rows."""
    percent = round(share * 100)
    return f"{percent}{sign}" if percent else ""


def patching_figure(restored, rows: list[str], cols: list[str], title: str, x_title: str, y_title: str) -> Figure:
    """[R, C] share of the clean answer restored by each patch: 0 white (as corrupted), 1 red (as clean)."""
    restored = np.asarray(restored, dtype=np.float64)
    reach = max(1.0, symmetric_range(restored))
    sign = "" if len(cols) > NARROW_CELLS else "%"
    cells = dict(text=[[restored_text(v, sign) for v in row] for row in restored], texttemplate="%{text}",
                 textfont=dict(size=SMALL_FONT)) if restored.size <= TEXT_CELLS else {}
    fig = Figure([heatmap(
        z=compact(restored), x=list(cols), y=list(rows), zmin=-reach, zmax=reach, colorscale=DIVERGING_SCALE,
        **cells, hovertemplate="%{y} · %{x}<br>restores %{z:.1%} of the clean answer<extra></extra>",
        colorbar=dict(title=dict(text="restored", side="right"), thickness=14, tickformat=".0%"),
    )])
    fig.update_xaxes(**position_axis(x_title) if x_title.startswith("position") else
                     dict(title_text=x_title, type="category"))
    fig.update_yaxes(title_text=y_title, autorange="reversed", type="category")
    return style_figure(fig, title, max(320, 140 + 22 * len(rows)), chart_width=WIDE_CHART,
                        margin=dict(t=80, l=90, b=90))
