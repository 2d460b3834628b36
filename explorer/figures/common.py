"""Shared theme and helpers for every figure: labels, compact arrays, layout, line and histogram builders."""
import math
import re

import numpy as np

from explorer.figures.plain import AXIS, Figure, bar, merge, scatter, subplots

TEMPLATE = "plotly_white"
FONT_SIZE = 14  # body text; readable on a classroom projector
SMALL_FONT = 12  # the smallest text we ever draw (ticks, subplot titles)
MARGIN = dict(l=60, r=20, t=60, b=50)
ATTENTION_SCALE = "Viridis"  # sequential; 0 is dark so blank (masked) cells stand out as white
MAGNITUDE_SCALE = "Viridis"  # norms, probabilities
DIVERGING_SCALE = "RdBu_r"  # red positive, blue negative, white at 0 (matplotlib's 'coolwarm')
BLUE, ORANGE, GREEN, RED, PURPLE = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"
GREY = "#c7c7c7"
PALETTE = [BLUE, ORANGE, GREEN, RED, PURPLE, "#8c564b", "#e377c2", "#17becf"]
TICK_ANGLES = (0, -45, -90)  # index:token tick labels turn to the first of these at which none overlap
# Category tick labels (label_every_category). Plotly.js skips category labels closer than 1.2 × their font: we
# give every label (tickmode 'array') at a size whose labels are TICK_PITCH × their font apart, the gap at which
# Plotly's 'auto' angle turns them upright without touching.
TICK_PITCH = 1.25
CHART_WIDTH = 600  # px: a chart beside another at a 1280 px wide window (the narrowest); x axes are sized for it
WIDE_CHART = 1150  # px: a chart across the whole page at 1280 px
COLORBAR_PX = 90  # a colour bar and its title, right of the plot
CHAR_WIDTH = 0.6  # the body font's average glyph width, in font sizes (labels' extent when turned upright)
TOOLBAR_PX = 40  # Gradio's chart label (top left, 35 px) and Plotly's toolbar (top right, on hover): titles start below
TITLE_BAND = 100  # a titled chart's top margin is at least this (gr.Plot raises it to 100 px itself): label, title
# and one row of a legend above the plot
LEGEND_ROW_PX = 32  # each more row of such a legend: Plotly's entry (1.3 × the font + 3 px) and the gap between rows
LEGEND_ENTRY_PX = 45  # an entry's width beside its text: Plotly's symbol and text gap (40 px) and the gap to the next
SLANT_PITCH = 1.8  # labels turned 45° need this × their font apart not to touch (closer ones turn upright)
ADVANCED_TRACE = "advanced"  # a trace's meta for a measure Simple view leaves out (tabs/live_plot.py)
THIN_MARKS = frozenset(",.;:'`\"!|-_")  # a token made only of these is a speck as a label: drawn large, in quotes
# whitespace as token labels show it (model_core's tokenization.visible; tests pin the two together): as small as a
# thin mark at tick size, drawn the same way
WHITESPACE_MARKS = frozenset("␣⏎⇥␍")
THIN_MARK_SCALE = 1.5  # a thin mark's size in tick fonts, where there is room (thin_mark_scale)
THIN_MARK_STYLE = "<span style='font-size:{scale:g}em'><b>{mark}</b></span>"
# An axis of scores or shares (0 to 1), a little wider: a line at 0 or 1 is drawn inside the plot, not half hidden
# under its edge (a test accuracy of 0 for the first thousand steps was invisible on the x axis).
UNIT_RANGE = [-0.04, 1.04]
UNIT_TICKS = [0, 0.2, 0.4, 0.6, 0.8, 1]


def note_figure(text: str, title: str, height: int = 220) -> Figure:
    """An empty panel that says, in its middle, why there is nothing to draw."""
    fig = Figure()
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=SMALL_FONT + 2))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return style_figure(fig, title, height=height)


def index_labels(tokens: list[str]) -> list[str]:
    """['h', 'e'] -> ['0:h', '1:e']: unique category labels (Plotly merges duplicate categories)."""
    return [f"{i}:{tok}" for i, tok in enumerate(tokens)]


def stream_labels(n_layers: int) -> list[str]:
    """Names of the L+1 residual-stream snapshots: 'embed', 'after L0', ..., 'after L{L-1}'."""
    return ["embed"] + [f"after L{layer}" for layer in range(n_layers)]


def head_label(layer: int, head: int) -> str:
    return f"L{layer}·H{head}"


def compact(values, decimals: int = 4) -> np.ndarray:
    """float32 copy rounded to a few decimals: small JSON payloads, no visible loss."""
    return np.round(np.asarray(values, dtype=np.float32), decimals)


def masked_to_nan(scores) -> np.ndarray:
    """-inf (causally masked) scores -> NaN, which Plotly draws as a blank cell."""
    out = compact(scores)
    out[np.isneginf(out)] = np.nan
    return out


def symmetric_range(values) -> float:
    """Half-width of a colour range centred at 0 that covers every finite value."""
    finite = np.abs(np.asarray(values, dtype=np.float64))
    finite = finite[np.isfinite(finite)]
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def value_range(values, min_span: float, include: float = 0.0) -> list[float]:
    """[low, high] of an axis covering the finite values and `include`, at least min_span wide (centred on them)
    and 5 % padded: values that hardly move stay a flat line instead of noise zoomed to fill the chart."""
    v = np.asarray(values, dtype=np.float64)
    v = np.append(v[np.isfinite(v)], include)
    low, high = float(v.min()), float(v.max())
    if high - low < min_span:
        middle = (low + high) / 2
        low, high = middle - min_span / 2, middle + min_span / 2
    pad = (high - low) * 0.05
    return [round(low - pad, 4), round(high + pad, 4)]


def attention_coloraxis(**colorbar) -> dict:
    """The one colour scale for attention weights: fixed to 0..1 so heads are comparable."""
    return dict(colorscale=ATTENTION_SCALE, cmin=0, cmax=1,
                colorbar={"title": dict(text="weight", side="right"), "thickness": 14, **colorbar})


def position_axis(title: str = "position") -> dict:
    """Axis settings for index:token categories; style_figure labels every one of them (label_every_category) and
    an x axis turns its labels to the first of TICK_ANGLES at which none collide (Plotly's 'auto' angle; upright
    at once when 45° would crowd them); the margin grows to fit them, and hover names every position in full."""
    return dict(title_text=title, type="category", automargin=True)


def style_figure(fig: Figure, title: str, height: int, chart_width: int = CHART_WIDTH, **layout) -> Figure:
    """Apply the house theme: white template, large fonts, explicit height, tight margins, the title below the
    toolbar, and every category labelled for a chart chart_width px wide (WIDE_CHART: the page's whole width)."""
    fig.update_layout(
        template=TEMPLATE, height=height, margin=MARGIN, font=dict(size=FONT_SIZE),
        title=dict(text=title, x=0.01, xanchor="left", font=dict(size=FONT_SIZE + 2)),
        hoverlabel=dict(font_size=SMALL_FONT + 1),
    )
    fig.update_layout(**layout)
    if title:  # the toolbar (modebar) takes the top TOOLBAR_PX of the chart on hover: the title sits under it
        fig.update_layout(title=dict(yref="container", y=1, yanchor="top", pad=dict(t=TOOLBAR_PX)))
        top = max(fig.layout.margin.get("t", 0), TITLE_BAND)
        band = title_band(fig, chart_width)
        fig.layout.margin["t"] = max(top, band)
        fig.layout.height += max(band - top, 0)  # a legend's extra rows take no height from the plot
    return label_every_category(fig, chart_width)


def top_legend(**extra) -> dict:
    """Horizontal legend above the plot area, so it never covers data."""
    return dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, **extra)


def title_band(fig: Figure, chart_width: int) -> int:
    """The top margin a titled chart needs: TITLE_BAND, and LEGEND_ROW_PX for each more row its legend above the
    plot wraps into at chart_width (the title sits above the legend, never under it)."""
    legend = fig.layout.legend or {}
    if fig.layout.showlegend is False or legend.get("yanchor") != "bottom" or (legend.get("y") or 0) < 1:
        return TITLE_BAND
    return TITLE_BAND + LEGEND_ROW_PX * (legend_rows(legend_names(fig), plot_width(fig, chart_width)) - 1)


def legend_names(fig: Figure) -> list[str]:
    """The legend's entries in Plotly's order (by legendrank: an earlier run's one entry comes last)."""
    shown = [t for t in fig.data if t.get("name") and t.get("showlegend") is not False]
    return [str(t.name) for t in sorted(shown, key=lambda t: t.get("legendrank") or 1000)]


def plot_width(fig: Figure, chart_width: int) -> int:
    """The plot area's width in px: a chart chart_width px wide less its side margins."""
    margin = fig.layout.margin or {}
    return chart_width - margin.get("l", MARGIN["l"]) - margin.get("r", MARGIN["r"])


def legend_rows(names: list[str], width: float) -> int:
    """How many rows a horizontal legend of these entries takes in width px, wrapped as Plotly wraps it (text
    widths estimated generously from the font): an earlier run's entry can push it to a second row, up into the
    title unless the top margin grows."""
    rows, used = 1, 0.0
    for name in names:
        entry = LEGEND_ENTRY_PX + len(name) * FONT_SIZE * CHAR_WIDTH
        if used and used + entry > width:
            rows, used = rows + 1, 0.0
        used += entry
    return rows


def step_panels(rows: int) -> Figure:
    """rows (1 or 2) panels stacked over one training-step axis, the first the taller. A quantity in another unit
    gets a panel and y axis of its own: a second y axis over the same plot lines up one axis's 0 with the other's
    1, and a line seems to start where it does not."""
    return subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                    row_heights=[0.6, 0.4] if rows == 2 else None)


# A row of band names: an annotation's box is its line (1.3 × the font) and 2 px of padding and border each side, 22
# px at FONT_SIZE; rows 20 px apart overlapped ('memorise' over 'build the circuit'), these leave 4 px of air.
BAND_ROW_PX = round(FONT_SIZE * 1.3) + 4 + 4


def band_label_places(bands: list, x_range, plot_px: int = CHART_WIDTH - MARGIN["l"] - MARGIN["r"]) -> list:
    """bands [(x0, x1, name)] on an x axis spanning x_range -> each name's (left edge as a share of the plot's
    width, row from the top): at its band's start, moved left as far as it must to end inside the plot, and a row
    lower when it would overlap a name before it (names' widths estimated from the font)."""
    low, high = x_range
    span = max(high - low, 1e-12)
    ends: list[float] = []  # per row, where its last name ends
    places = []
    for x0, _, name in bands:
        width = len(name) * FONT_SIZE * CHAR_WIDTH / plot_px + 0.01  # a little air between two names
        left = min(max((x0 - low) / span, 0.0), max(1.0 - width, 0.0))
        row = next((r for r, end in enumerate(ends) if end <= left), len(ends))
        ends[row:row + 1] = [left + width]
        places.append((left, row))
    return places


FADED_OPACITY = 0.35  # an earlier run's curves, drawn under the current run's for comparison


def faded(traces: list, label: str) -> list:
    """An earlier run's traces (changed in place), faded and dotted under the current run's: one legend entry,
    label, after the current run's, shows or hides them all (the first trace Simple view keeps carries it); hover
    names the run, then the curve."""
    entry = next((t for t in traces if t.get("meta") != ADVANCED_TRACE), None)
    for t in traces:
        merge(t, dict(name=label, legendgroup="previous", legendrank=2000, showlegend=t is entry,
                      opacity=FADED_OPACITY, line=dict(dash="dot", width=2),
                      hovertemplate=f"{label}<br>{t.get('hovertemplate') or ''}"))
    return traces


def lines_figure(x, series: list[tuple[str, np.ndarray]], title: str, x_title: str, y_title: str,
                 height: int = 380, with_means: bool = True, colors: list[str] | None = None,
                 x_axis: dict | None = None) -> Figure:
    """One line with markers per (name, values) series; legend names carry the series mean. colors: one per
    series (default: the palette in order); x_axis: more settings of the x axis (a category axis, say)."""
    fig = Figure()
    for i, (name, values) in enumerate(series):
        values = compact(values)
        label = f"{name} (mean {float(np.mean(values)):.3g})" if with_means else name
        fig.add_trace(scatter(
            x=x, y=values, name=label, mode="lines+markers",
            line=dict(color=colors[i] if colors else PALETTE[i % len(PALETTE)]),
            hovertemplate=f"{name}<br>{x_title} %{{x}}<br>{y_title} %{{y:.3f}}<extra></extra>",
        ))
    fig.update_xaxes(**{"title_text": x_title, **(x_axis or {})})
    fig.update_yaxes(title_text=y_title, rangemode="tozero")
    return style_figure(fig, title, height, legend=top_legend(), margin=dict(t=90))


def position_lines_figure(series: list[tuple[str, np.ndarray]], tokens: list[str], title: str,
                          y_title: str) -> Figure:
    """Per-position lines (x = index:token) with means in the legend, as in the seed's norm plots."""
    return lines_figure(index_labels(tokens), series, title, "position", y_title, x_axis=position_axis("position"))


def histogram_bars(counts, edges, name: str, color: str = BLUE) -> dict:
    """Pre-computed histogram (counts [bins], edges [bins+1]) as touching bars."""
    edges = np.asarray(edges, dtype=np.float64)
    return bar(
        x=compact((edges[:-1] + edges[1:]) / 2), y=np.asarray(counts), width=compact(np.diff(edges)),
        name=name, marker=dict(color=color, line=dict(width=0)),
        hovertemplate="value ≈ %{x:.3f}<br>count %{y}<extra></extra>",
    )


def histogram_pair_figure(panels: list[tuple], title: str, x_title: str, height: int = 380) -> Figure:
    """Two pre-computed histograms side by side; panels = [(counts, edges, subplot title), ...]."""
    fig = subplots(rows=1, cols=len(panels), subplot_titles=[p[2] for p in panels], horizontal_spacing=0.08)
    for col, (counts, edges, name) in enumerate(panels, start=1):
        fig.add_trace(histogram_bars(counts, edges, name, PALETTE[col - 1]), row=1, col=col)
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text="count", col=1)
    return style_figure(fig, title, height, showlegend=False, bargap=0, margin=dict(t=90))


def unique_labels(labels: list[str]) -> list[str]:
    """Keep vocabulary labels as they are unless two coincide; then prefix the token id."""
    labels = [str(label) for label in labels]
    return labels if len(set(labels)) == len(labels) else [f"{i}:{s}" for i, s in enumerate(labels)]


def visible_tick(label, scale: float = THIN_MARK_SCALE) -> str:
    """A category's tick text: a token made only of thin marks or whitespace symbols (',', '.', "3:,", '␣', '⏎')
    large (scale × the tick font) and bold between curly quotes, so that it reads under its bar even turned upright;
    anything else as it is."""
    label = str(label)
    prefix, token = re.fullmatch(r"(\d+:)?(.*)", label, re.S).groups()
    if token and set(token) <= THIN_MARKS | WHITESPACE_MARKS:
        return f"{prefix or ''}“{THIN_MARK_STYLE.format(scale=scale, mark=token)}”"
    return label


def category_ticks(categories: list, length: float, largest: int = FONT_SIZE, upright: bool = False) -> dict:
    """Tick settings that label the categories along `length` px themselves (tickmode 'array', so Plotly skips
    none): every one at the largest font from `largest` down to SMALL_FONT at which they fit, else every k-th at
    SMALL_FONT, evenly (hover still names each in full). upright: labels Plotly may turn upright, whose thin marks
    are drawn only as large as the room between two labels allows (thin_mark_scale)."""
    n = max(len(categories), 1)
    font = next((f for f in range(largest, SMALL_FONT - 1, -1) if length / n >= TICK_PITCH * f), SMALL_FONT)
    step = max(1, math.ceil(n * TICK_PITCH * font / max(length, 1)))
    shown = list(categories)[::step]
    scale = thin_mark_scale(length / n * step, font) if upright else THIN_MARK_SCALE
    return dict(tickmode="array", tickvals=shown, ticktext=[visible_tick(c, scale) for c in shown],
                tickfont=dict(size=font))


def thin_mark_scale(spacing: float, font: int) -> float:
    """How large (in tick fonts, 1 to THIN_MARK_SCALE) a thin mark's label may be drawn with `spacing` px between
    label centres: a label turned upright is as thick as its largest text, and at THIN_MARK_SCALE the quoted ','
    and ':' of a 50-token prompt ran into their neighbours. TICK_PITCH fonts apart fit a label at scale 1."""
    return min(THIN_MARK_SCALE, max(1.0, math.floor(100 * spacing / (TICK_PITCH * font)) / 100))  # rounded down


def label_every_category(fig: Figure, chart_width: int = CHART_WIDTH) -> Figure:
    """Give every category axis with tick labels its ticks (category_ticks), sized for a chart chart_width px wide
    (the figure's height is known). Axes whose ticks a figure set itself are left as they are."""
    for key in [k for k in fig.layout if AXIS.match(k)]:
        axis = fig.layout[key]
        if axis.get("showticklabels") is False or axis.get("tickmode") or axis.get("tickvals") is not None:
            continue
        categories = axis_categories(fig, key)
        if categories:  # (an axis of a grid of small panels shows no labels: skipped above, at no cost)
            largest = (axis.get("tickfont") or {}).get("size") or FONT_SIZE
            length = axis_length(fig, key, chart_width)
            upright = key[0] == "x" and axis.get("tickangle") is None  # Plotly's 'auto' angle may turn them
            merge(axis, category_ticks(categories, length, largest, upright))
            if upright:  # Plotly's 'auto' angle, from these; slanted thin marks need their larger size's room too
                spacing, font = length / len(axis["tickvals"]), axis["tickfont"]["size"]
                thickest = max(thin_mark_scale(spacing, font) if visible_tick(c) != str(c) else 1 for c in categories)
                slant = spacing >= SLANT_PITCH * font * thickest
                axis["autotickangles"] = list(TICK_ANGLES if slant else (TICK_ANGLES[0], TICK_ANGLES[-1]))
    return fig


def label_step(fig: Figure, key: str) -> int:
    """Every how many categories the layout axis key ('xaxis2') is labelled: 1 when each has its label."""
    shown, categories = fig.layout[key].get("tickvals"), axis_categories(fig, key)
    if shown is None or len(shown) < 2 or not categories:
        return 1
    return categories.index(shown[1]) - categories.index(shown[0])


def axis_categories(fig: Figure, key: str) -> list:
    """The categories along a layout axis ('xaxis2'), in Plotly's order: its categoryarray, else first appearance
    in its traces; [] unless it is a category axis (set, or text that Plotly would make one)."""
    axis, letter = fig.layout[key], key[0]
    if axis.get("categoryorder") == "array" and axis.get("categoryarray") is not None:
        return list(axis["categoryarray"])
    ref = letter + key[5:]
    values = [v for t in fig.data if (t.get(f"{letter}axis") or letter) == ref and isinstance(t.get(letter), list)
              for v in t[letter] if v is not None]
    if axis.get("type") not in ("category", None) or not values:
        return []
    if axis.get("type") is None and not all(isinstance(v, str) and not _numeric(v) for v in values):
        return []
    return list(dict.fromkeys(values))


def _numeric(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def axis_length(fig: Figure, key: str, chart_width: int = CHART_WIDTH) -> float:
    """Pixels along a layout axis: the plot area (chart less margins, grown for turned labels, and a colour bar
    for x) times the axis's domain."""
    layout, margin = fig.layout, fig.layout.margin or {}
    domain = layout[key].get("domain") or [0, 1]
    if key[0] == "y":
        whole = layout.height - margin.get("t", MARGIN["t"]) - max(margin.get("b", MARGIN["b"]), _label_band(fig, "x"))
    else:
        bar_px = COLORBAR_PX if _has_colorbar(fig) else 0
        whole = chart_width - max(margin.get("l", MARGIN["l"]), _label_band(fig, "y")) - margin.get("r", MARGIN["r"]) \
            - bar_px
    return max(whole, 1) * (domain[1] - domain[0])


def _label_band(fig: Figure, letter: str) -> float:
    """Estimated px the category labels of the x (or y) axes take, turned upright, with the axis title: how far
    automargin may grow the bottom (or left) margin."""
    return label_band([c for k in fig.layout if AXIS.match(k) and k[0] == letter
                       and fig.layout[k].get("showticklabels") is not False for c in axis_categories(fig, k)])


def label_band(labels) -> float:
    """Px that tick labels turned upright take beside their axis (at the larger tick font), with the axis's title
    (0 without labels)."""
    longest = max((len(str(c)) for c in labels), default=0)
    return longest * CHAR_WIDTH * FONT_SIZE + 2 * FONT_SIZE + 10 if longest else 0


def labelled_rows_height(n_rows: int, x_labels=(), top: int = TITLE_BAND, bottom: int = MARGIN["b"]) -> int:
    """A chart's height at which n_rows category rows are each labelled at SMALL_FONT, above x_labels turned
    upright (or the bottom margin, if larger)."""
    return math.ceil(top + max(bottom, label_band(x_labels)) + n_rows * TICK_PITCH * SMALL_FONT) + 1


def _has_colorbar(fig: Figure) -> bool:
    return any(t.get("type") == "heatmap" and t.get("showscale") is not False for t in fig.data) \
        or "coloraxis" in fig.layout


def figure_to_json(fig: Figure) -> str:
    """Compact JSON (typed arrays) for a client-side `Plotly.react(div, data, layout)`."""
    return fig.to_json()
