"""Shared theme and helpers for every figure: labels, compact arrays, layout, line and histogram builders."""
import numpy as np

from explorer.figures.plain import Figure, bar, scatter, subplots

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


def attention_coloraxis(**colorbar) -> dict:
    """The one colour scale for attention weights: fixed to 0..1 so heads are comparable."""
    return dict(colorscale=ATTENTION_SCALE, cmin=0, cmax=1,
                colorbar={"title": dict(text="weight", side="right"), "thickness": 14, **colorbar})


def position_axis(title: str = "position", turn: bool = True) -> dict:
    """Axis settings for index:token categories. Labels never overlap: on a category axis Plotly skips labels closer than 1.2 × their font, and an
    x axis turns them to the first of TICK_ANGLES at which none collide; the margin grows to fit them, and hover
    names every position in full. turn False: a y axis (its labels never turn)."""
    axis = dict(title_text=title, type="category", automargin=True)
    if turn:  # tickangle left unset: Plotly's 'auto', which picks from autotickangles
        axis["autotickangles"] = list(TICK_ANGLES)
    return axis


def style_figure(fig: Figure, title: str, height: int, **layout) -> Figure:
    """Apply the house theme: white template, large fonts, explicit height, tight margins."""
    fig.update_layout(
        template=TEMPLATE, height=height, margin=MARGIN, font=dict(size=FONT_SIZE),
        title=dict(text=title, x=0.01, xanchor="left", font=dict(size=FONT_SIZE + 2)),
        hoverlabel=dict(font_size=SMALL_FONT + 1),
    )
    fig.update_layout(**layout)
    return fig


def top_legend(**extra) -> dict:
    """Horizontal legend above the plot area, so it never covers data."""
    return dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, **extra)


def lines_figure(x, series: list[tuple[str, np.ndarray]], title: str, x_title: str, y_title: str,
                 height: int = 380, with_means: bool = True) -> Figure:
    """One line with markers per (name, values) series; legend names carry the series mean."""
    fig = Figure()
    for i, (name, values) in enumerate(series):
        values = compact(values)
        label = f"{name} (mean {float(np.mean(values)):.3g})" if with_means else name
        fig.add_trace(scatter(
            x=x, y=values, name=label, mode="lines+markers", line=dict(color=PALETTE[i % len(PALETTE)]),
            hovertemplate=f"{name}<br>{x_title} %{{x}}<br>{y_title} %{{y:.3f}}<extra></extra>",
        ))
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title, rangemode="tozero")
    return style_figure(fig, title, height, legend=top_legend(), margin=dict(t=90))


def position_lines_figure(series: list[tuple[str, np.ndarray]], tokens: list[str], title: str,
                          y_title: str) -> Figure:
    """Per-position lines (x = index:token) with means in the legend, as in the seed's norm plots."""
    labels = index_labels(tokens)
    fig = lines_figure(labels, series, title, "position", y_title)
    return fig.update_xaxes(**position_axis())


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


def figure_to_json(fig: Figure) -> str:
    """Compact JSON (typed arrays) for a client-side `Plotly.react(div, data, layout)`."""
    return fig.to_json()
