"""Attention patterns: all heads at a glance, one head in detail, the seed's four steps, one query's bars."""
import numpy as np

from explorer.common.wording import model_shape
from explorer.figures.common import (
    ATTENTION_SCALE,
    BLUE,
    DIVERGING_SCALE,
    GREY,
    MAGNITUDE_SCALE,
    ORANGE,
    RED,
    SMALL_FONT,
    WIDE_CHART,
    attention_coloraxis,
    compact,
    head_label,
    index_labels,
    labelled_rows_height,
    masked_to_nan,
    position_axis,
    style_figure,
    symmetric_range,
)
from explorer.figures.heads import OVERVIEW_PANELS
from explorer.figures.plain import Figure, bar, heatmap, subplots

PAIR_HOVER = "query %{y} → key %{x}<br>weight %{z:.3f}"
PERCENT_HOVER = "query %{y} → key %{x}<br>weight %{z}%"
HEAD_MAP_MAX_HEIGHT = 1200  # px: a head's heatmap (across the page) labels every row and column up to ~62 tokens
# (the default prompt's 60); longer prompts every k-th, as the caption says
STEPS_MAX_HEIGHT = 1200  # px: the four steps label every row up to ~70 tokens (their narrow key axes: every k-th)
STEP_TITLES = ("Scores before mask", "Scores after causal mask", "Attention weights (softmax)", "Head output z")


def _grid_axes(n_rows: int, n_cols: int, gap_x: float, gap_y: float) -> tuple[dict, list[tuple]]:
    """Layout axes for an n_rows × n_cols grid of tick-less panels (built as one dict: 10× faster than
    a subplot grid + update_*axes for 64 panels) and each panel's (x domain, y domain)."""
    width, height = (1 - gap_x * (n_cols - 1)) / n_cols, (1 - gap_y * (n_rows - 1)) / n_rows
    axes, domains = {}, []
    bare = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False, type="category")
    for i in range(n_rows * n_cols):
        row, col = divmod(i, n_cols)
        x0, y1 = col * (width + gap_x), 1 - row * (height + gap_y)
        domains.append(([round(x0, 6), round(min(1, x0 + width), 6)], [round(max(0, y1 - height), 6), round(y1, 6)]))
        suffix = "" if i == 0 else str(i + 1)
        axes[f"xaxis{suffix}"] = dict(domain=domains[-1][0], anchor=f"y{suffix}", **bare)
        axes[f"yaxis{suffix}"] = dict(domain=domains[-1][1], anchor=f"x{suffix}", autorange="reversed", **bare)
    return axes, domains


def _head_grid(patterns, tokens: list[str], gap_x: float, gap_y: float,
               first_layer: int = 0) -> tuple[Figure, list[tuple]]:
    """L rows × H columns of small heatmaps sharing one colour axis; also returns panel domains. first_layer:
    the layer number of the first row (a large model's figure shows one layer).

    Weights travel as whole percents (uint8): 4× smaller than float32, which matters for 64 heads."""
    n_layers, n_heads = patterns.shape[:2]
    labels = index_labels(tokens)
    percent = _percent(patterns)  # [L, H, T, T]
    axes, domains = _grid_axes(n_layers, n_heads, gap_x, gap_y)
    names = [head_label(first_layer + i // n_heads, i % n_heads) for i in range(n_layers * n_heads)]
    traces = [
        heatmap(z=percent[i // n_heads, i % n_heads], x=labels, y=labels, coloraxis="coloraxis",
                xaxis=f"x{i + 1 if i else ''}", yaxis=f"y{i + 1 if i else ''}", name=name,
                hovertemplate=f"{name}<br>{PERCENT_HOVER}<extra></extra>")
        for i, name in enumerate(names)
    ]
    return Figure(data=traces, layout=axes), domains


def _percent(shares) -> np.ndarray:
    """Shares 0..1 as whole percents (uint8), the grid's compact colour values."""
    return np.rint(np.clip(shares, 0, 1) * 100).astype(np.uint8)


PERCENT_TICKS = [0, 25, 50, 75, 100]


def _percent_coloraxis(in_percent: bool = False, **colorbar) -> dict:
    """The 0..1 attention scale for uint8 percent data: cmin/cmax 0..100, ticks still read 0..1; in_percent: ticks
    and title in % (a chart whose cells print percents reads its colour bar in the same unit)."""
    ticks = [f"{t}%" for t in PERCENT_TICKS] if in_percent else ["0", "0.25", "0.5", "0.75", "1"]
    if in_percent:
        colorbar["title"] = dict(text="% of attention", side="right")
    axis = attention_coloraxis(tickvals=PERCENT_TICKS, ticktext=ticks, **colorbar)
    return {**axis, "cmin": 0, "cmax": 100}


def selected_label(label: str, selected: bool) -> str:
    """A head's title over its small heatmap; the selected head's in red and bold, above its red outline."""
    return f"<span style='color:{RED}'><b>{label}</b></span>" if selected else label


def attention_grid_figure(patterns, tokens: list[str], selected: tuple[int, int] | None = None) -> Figure:
    """patterns [L, H, T, T] -> every head's pattern as a small heatmap titled L{l}·H{h}; selected head outlined."""
    n_layers, n_heads = patterns.shape[:2]
    fig, domains = _head_grid(patterns, tokens, gap_x=0.1 / n_heads, gap_y=0.4 / n_layers)
    fig.update_layout(annotations=[
        dict(text=selected_label(head_label(*divmod(i, n_heads)), divmod(i, n_heads) == selected), x=sum(dx) / 2,
             y=dy[1], xref="paper", yref="paper", xanchor="center", yanchor="bottom", showarrow=False,
             font_size=SMALL_FONT + 1)
        for i, (dx, dy) in enumerate(domains)
    ])
    if selected is not None:
        panel = selected[0] * n_heads + selected[1] + 1
        suffix = "" if panel == 1 else panel  # plotly calls the first axes 'x', not 'x1'
        fig.add_shape(type="rect", xref=f"x{suffix} domain", yref=f"y{suffix} domain", x0=-0.04, x1=1.04,
                      y0=-0.04, y1=1.0, line=dict(color=RED, width=3))  # up to its label, not over it
    title = "Attention patterns of every head (rows = layers, columns = heads; query ↓, key →)"
    return style_figure(fig, title, height=110 + 125 * n_layers, coloraxis=_percent_coloraxis(),
                        margin=dict(l=20, r=20, t=80, b=20))


def attention_overview_figure(stats: dict[str, np.ndarray], layer_patterns, tokens: list[str],
                              selected: tuple[int, int]) -> Figure:
    """{stat: [L, H]} and the selected layer's patterns [H, T, T] -> three L×H maps (share of attention on the
    previous token, itself, the first token) above that layer's heads as small heatmaps, selected head outlined.
    For models with too many heads for attention_grid_figure (270 T×T maps would be unreadable and slow)."""
    layer, head = selected
    n_layers, n_heads = np.shape(stats["prev_token"])
    fig, domains = _head_grid(np.asarray(layer_patterns)[None], tokens, gap_x=0.1 / n_heads, gap_y=0,
                              first_layer=layer)
    height = 170 + 18 * n_layers + 190  # overview rows, then one row of heads (~130 px tall)
    split = 190 / (height - 100)  # share of the plotting area below the overview (margins: 100 px)
    for i in range(n_heads):  # the layer's row takes the bottom of the figure
        fig.layout[f"yaxis{i + 1 if i else ''}"]["domain"] = [0, round(split - 0.08, 4)]
    rows, cols = [f"L{n}" for n in range(n_layers)], [f"H{n}" for n in range(n_heads)]
    notes = []
    for i, (key, title) in enumerate(OVERVIEW_PANELS):
        n = n_heads + i + 1
        x_domain = [round(i / 3 + 0.02, 4), round((i + 1) / 3 - 0.02, 4)]
        fig.layout[f"xaxis{n}"] = dict(domain=x_domain, anchor=f"y{n}", type="category", side="top",
                                       tickfont=dict(size=SMALL_FONT))
        fig.layout[f"yaxis{n}"] = dict(domain=[round(split, 4), 0.94], anchor=f"x{n}", type="category",
                                       autorange="reversed", tickfont=dict(size=SMALL_FONT))
        fig.add_trace(heatmap(z=_percent(stats[key]), x=cols, y=rows, coloraxis="coloraxis", xaxis=f"x{n}",
                              yaxis=f"y{n}", name=f"overview: {title}", texttemplate="%{z}",
                              textfont=dict(size=SMALL_FONT),
                              hovertemplate=f"%{{y}}·%{{x}}<br>attention on {title}: %{{z}}%<extra></extra>"))
        fig.add_shape(type="rect", xref=f"x{n}", yref=f"y{n}", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5,
                      y1=layer + 0.5, line=dict(color=RED, width=2))
        notes.append(dict(text=f"% of attention on {title}", x=sum(x_domain) / 2, y=1, yanchor="bottom"))
    notes += [dict(text=selected_label(head_label(layer, h), h == head), x=sum(dx) / 2, y=dy[1] * (split - 0.08),
                   yanchor="bottom")
              for h, (dx, dy) in enumerate(domains)]
    fig.update_layout(annotations=[dict(a, xref="paper", yref="paper", xanchor="center", showarrow=False,
                                        font_size=SMALL_FONT) for a in notes])
    suffix = "" if head == 0 else head + 1
    fig.add_shape(type="rect", xref=f"x{suffix} domain", yref=f"y{suffix} domain", x0=-0.04, x1=1.04, y0=-0.04,
                  y1=1.0, line=dict(color=RED, width=3))
    title = (f"Every head at a glance ({model_shape(n_layers, n_heads)}: click a cell), then layer {layer}'s "
             "heads (query ↓, key →)")
    return style_figure(fig, title, height=height, chart_width=WIDE_CHART, coloraxis=_percent_coloraxis(True),
                        margin=dict(l=50, r=20, t=100, b=20))


def live_attention_figure(patterns, tokens: list[str]) -> Figure:
    """patterns [L, H, T, T] -> compact grid (≤ 300 px) for the live training view; keeps zoom across updates."""
    n_layers, n_heads = patterns.shape[:2]
    fig, domains = _head_grid(patterns, tokens, gap_x=0.08 / n_heads, gap_y=0.12 / n_layers)
    headers = [dict(text=f"L{layer}", x=0, y=sum(domains[layer * n_heads][1]) / 2, xanchor="right", xshift=-4)
               for layer in range(n_layers)]  # row and column headers instead of L×H titles
    headers += [dict(text=f"H{head}", x=sum(domains[head][0]) / 2, y=1, yanchor="bottom")
                for head in range(n_heads)]
    fig.update_layout(annotations=[dict(h, xref="paper", yref="paper", showarrow=False, font_size=SMALL_FONT)
                                   for h in headers])
    return style_figure(fig, "", height=min(300, 70 + 60 * n_layers), uirevision="live",
                        coloraxis=_percent_coloraxis(thickness=10), margin=dict(l=40, r=10, t=30, b=10))


def attention_head_figure(pattern, tokens: list[str], layer: int, head: int) -> Figure:
    """pattern [T, T] -> one head's attention as a large heatmap: query rows (top = 0), key columns."""
    labels, n = index_labels(tokens), len(tokens)
    fig = Figure(heatmap(
        z=compact(pattern, 3), x=labels, y=labels, zmin=0, zmax=1, colorscale=ATTENTION_SCALE,
        colorbar=dict(title=dict(text="attention weight", side="right")),
        hovertemplate=PAIR_HOVER + "<extra></extra>",
        texttemplate="%{z:.2f}" if n <= 12 else None, textfont=dict(size=SMALL_FONT),
    ))
    fig.update_xaxes(**position_axis("key position (looked at)"))
    fig.update_yaxes(**position_axis("query position (looking)"), autorange="reversed")
    title = f"{head_label(layer, head)} attention pattern"
    height = int(np.clip(labelled_rows_height(n, labels, bottom=90), 440, HEAD_MAP_MAX_HEIGHT))
    return style_figure(fig, title, height=height, chart_width=WIDE_CHART, margin=dict(l=90, b=90))


def attention_steps_figure(scores_unmasked, scores_masked, pattern, z, tokens: list[str],
                           layer: int, head: int) -> Figure:
    """[T, T] ×3 and z [T, d_head] -> the seed's four panels: raw scores, masked scores, softmax, head output."""
    labels, scores = index_labels(tokens), compact(scores_unmasked, 3)
    z = compact(z, 3)
    fig = subplots(rows=1, cols=4, subplot_titles=STEP_TITLES, shared_yaxes=True,
                        horizontal_spacing=0.09, column_widths=[1, 1, 1, 0.6])  # colour bars in the gaps
    panels = [
        (scores, labels, "coloraxis", PAIR_HOVER.replace("weight", "score")),
        (masked_to_nan(scores_masked), labels, "coloraxis",
         PAIR_HOVER.replace("weight", "score") + "<br>(blank cells: future keys, masked to −∞)"),
        (compact(pattern, 3), labels, "coloraxis2", PAIR_HOVER),
        (z, list(range(z.shape[1])), "coloraxis3", "position %{y}<br>dim %{x}<br>z %{z:.3f}"),
    ]
    for col, (values, x, axis, hover) in enumerate(panels, start=1):
        fig.add_trace(heatmap(z=values, x=x, y=labels, coloraxis=axis, hoverongaps=False,
                                 hovertemplate=hover + "<extra></extra>"), row=1, col=col)
    fig.update_layout(**_steps_coloraxes(fig, scores, z))
    fig.update_xaxes(title_text="key position", type="category")
    fig.update_xaxes(title_text="d_head dimension", type="linear", showticklabels=True, row=1, col=4)
    fig.update_yaxes(**position_axis(""), autorange="reversed")
    fig.update_yaxes(title_text="query position", row=1, col=1)
    title = f"{head_label(layer, head)}: from scores to output, step by step"
    height = int(np.clip(labelled_rows_height(len(tokens), labels, bottom=70), 400, STEPS_MAX_HEIGHT))
    return style_figure(fig, title, height=height, chart_width=WIDE_CHART, margin=dict(l=80, r=60, t=90, b=70))


def _steps_coloraxes(fig: Figure, scores: np.ndarray, z: np.ndarray) -> dict:
    """Three colour axes for the steps figure (scores, weights 0..1, z centred at 0), bars right of panels 2-4."""
    finite = scores[np.isfinite(scores)]
    x = [fig.axis("x", 1, col).domain[1] + 0.004 for col in (2, 3, 4)]
    bar = dict(thickness=12, len=0.9, xanchor="left", tickfont=dict(size=10))
    half = symmetric_range(z)
    return dict(
        coloraxis=dict(colorscale=MAGNITUDE_SCALE, cmin=float(finite.min()), cmax=float(finite.max()),
                       colorbar=dict(title=dict(text="score (blank = masked)", side="right"), x=x[0], **bar)),
        coloraxis2=attention_coloraxis(x=x[1], **bar),
        coloraxis3=dict(colorscale=DIVERGING_SCALE, cmid=0, cmin=-half, cmax=half,
                        colorbar=dict(title=dict(text="z value", side="right"), x=x[2], **bar)),
    )


def query_attention_bars_figure(pattern, tokens: list[str], query: int,
                                layer: int | None = None, head: int | None = None) -> Figure:
    """pattern [T, T] -> bars of how one query splits its attention over keys 0..query (later keys grey, 0)."""
    labels, n = index_labels(tokens), len(tokens)
    weights = compact(pattern[query], 4)
    weights[query + 1:] = 0  # future keys are masked: exactly zero weight
    strongest = int(np.argmax(weights[: query + 1]))
    colors = [ORANGE if k == strongest else BLUE if k <= query else GREY for k in range(n)]
    fig = Figure(bar(x=labels, y=weights, marker_color=colors, name="attention weight",
                           hovertemplate=f"query {labels[query]} → key %{{x}}<br>weight %{{y:.3f}}<extra></extra>"))
    if query < n - 1:
        fig.add_vrect(x0=query + 0.5, x1=n - 0.5, fillcolor=GREY, opacity=0.25, line_width=0,
                      annotation_text="future keys (masked)", annotation_position="top left")
    fig.update_xaxes(**position_axis("key position"))
    fig.update_yaxes(title_text="attention weight", range=[0, 1.05])
    where = f" (layer {layer}, head {head})" if layer is not None and head is not None else ""
    return style_figure(fig, f"Where {labels[query]} looks{where}", height=380, chart_width=WIDE_CHART,
                        margin=dict(b=80))
