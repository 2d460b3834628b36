"""Embeddings: PCA scatter plots, the learned positional table, token vs position embedding sizes."""
import numpy as np

from explorer.figures.common import (
    BLUE,
    CHART_WIDTH,
    COLORBAR_PX,
    DIVERGING_SCALE,
    MAGNITUDE_SCALE,
    PALETTE,
    SMALL_FONT,
    compact,
    index_labels,
    note_figure,
    position_axis,
    position_lines_figure,
    style_figure,
    symmetric_range,
    top_legend,
)
from explorer.figures.label_places import equal_scale_ranges, padded_range, point_label_positions, x_pixels, y_pixels
from explorer.figures.plain import Figure, heatmap, scatter, scatter3d

MAX_TEXT_LABELS = 300  # more points than this: hover only, no text on the plot
MARKER_PX, LABEL_FONT = 8, SMALL_FONT + 1  # a 2-D map's points and their labels


# A character vocabulary's map colours each point by what its character is, so the groups training makes (the
# vowels together, the capitals apart) show without a label on every point of a crowd
CHARACTER_KINDS = {"vowels (a e i o u)": PALETTE[3], "other small letters": PALETTE[0], "capitals": PALETTE[1],
                   "digits": PALETTE[4], "spaces and punctuation": PALETTE[5]}


def character_kind(label: str) -> str:
    """Which of CHARACTER_KINDS one character is (a space or newline drawn as a mark counts as punctuation)."""
    if label.isdigit():
        return "digits"
    if not label.isalpha():
        return "spaces and punctuation"
    if label.isupper():
        return "capitals"
    return "vowels (a e i o u)" if label in "aeiou" else "other small letters"


def character_kinds(labels: list[str]):
    """Each label's character_kind when every label is one character (a character vocabulary), else None."""
    return [character_kind(label) for label in labels] if labels and all(len(x) == 1 for x in labels) else None


def _pc_titles(n: int, explained) -> list[str]:
    """['PC1 (34%)', 'PC2 (12%)', ...]; plain 'PC1' when the explained ratios are unknown."""
    if explained is None:
        return [f"PC{i + 1}" for i in range(n)]
    return [f"PC{i + 1} ({float(explained[i]):.0%})" for i in range(n)]


def pca_scatter_figure(coords, labels: list[str], color=None, title: str = "PCA of embeddings",
                       explained=None, color_title: str = "position") -> Figure:
    """coords [N, 2|3] -> 2-D scatter with text labels (N ≤ 300), or a 3-D scatter for 3 columns.

    color [N] numbers (e.g. position) colour the points; without them, labels that are single characters colour
    them by character_kind, with a legend. explained [k] ratios go in the axis titles."""
    coords = compact(coords, 3)
    n_points, n_dims = coords.shape
    axes = _pc_titles(n_dims, explained)
    kinds = character_kinds(list(labels)) if color is None else None
    marker = dict(size=MARKER_PX if n_dims == 2 else 4, color=BLUE, line=dict(width=0))
    if color is not None:
        marker.update(color=compact(color, 3), colorscale=MAGNITUDE_SCALE, showscale=True,
                      colorbar=dict(title=dict(text=color_title, side="right")))
    elif kinds:
        marker.update(color=[CHARACTER_KINDS[kind] for kind in kinds])
    text_mode = n_points <= MAX_TEXT_LABELS
    common = dict(mode="markers+text" if text_mode else "markers", marker=marker, customdata=list(labels),
                  text=list(labels) if text_mode else None, textfont=dict(size=LABEL_FONT), name="", showlegend=False)
    if n_dims == 3:
        fig = Figure(scatter3d(
            x=coords[:, 0], y=coords[:, 1], z=coords[:, 2], **common,
            hovertemplate="%{customdata}<br>PC1 %{x:.2f}, PC2 %{y:.2f}, PC3 %{z:.2f}<extra></extra>"))
        fig.update_layout(scene=dict(xaxis_title=axes[0], yaxis_title=axes[1], zaxis_title=axes[2]))
        return style_figure(fig, title, height=620, margin=dict(l=10, r=10, t=60, b=10))
    fig = Figure(scatter(
        x=coords[:, 0], y=coords[:, 1], textposition="top center", **common,
        hovertemplate="%{customdata}<br>PC1 %{x:.2f}, PC2 %{y:.2f}<extra></extra>"))
    fig.update_xaxes(title_text=axes[0], zeroline=True)
    fig.update_yaxes(title_text=axes[1], zeroline=True)
    if kinds:  # the legend's entries: one marker per kind present, drawn nowhere
        for kind in (k for k in CHARACTER_KINDS if k in kinds):
            fig.add_trace(scatter(x=[None], y=[None], mode="markers", name=kind, hoverinfo="skip",
                                  marker=dict(size=MARKER_PX, color=CHARACTER_KINDS[kind])))
        fig.update_layout(showlegend=True, legend=top_legend(font=dict(size=SMALL_FONT)))
    fig = style_figure(fig, title, height=520)
    # one unit as long across as up: which points sit close reads true in every direction
    x_range, y_range = equal_scale_ranges(padded_range(coords[:, 0]), padded_range(coords[:, 1]),
                                          *plot_size(fig, color is not None))
    fig.update_xaxes(range=x_range)
    fig.update_yaxes(range=y_range)
    if text_mode:  # labels that would pile on others are left off (hover names every point)
        place_point_labels(fig, coords, list(labels), x_range, y_range, color is not None)
    return fig


def plot_size(fig: Figure, colorbar: bool) -> tuple[float, float]:
    """(width, height) px of the plot area: a CHART_WIDTH chart less its margins (and colour bar)."""
    margin = fig.layout.margin
    return CHART_WIDTH - margin.l - margin.r - (COLORBAR_PX if colorbar else 0), fig.layout.height - margin.t - margin.b


def place_point_labels(fig: Figure, coords, labels: list[str], x_range, y_range, colorbar: bool) -> None:
    """Give the scatter's text labels places where none covers another label or a marker (point_label_positions);
    the ones with no free place get no text. The plot's size: a CHART_WIDTH chart less its margins (and colour bar)."""
    width, height = plot_size(fig, colorbar)
    xs, ys = x_pixels(coords[:, 0], x_range, width), y_pixels(coords[:, 1], y_range, height)
    places = point_label_positions(xs, ys, labels, LABEL_FONT, MARKER_PX / 2, width, height)
    fig.data[0].text = [label if place else "" for label, place in zip(labels, places)]
    fig.data[0].textposition = [place or "top center" for place in places]


# what a model's position table is (kind) -> the heatmap's title, before ": first P positions"
POSITION_TABLE_TITLES = {
    "learned": "Learned positional embeddings",
    "untrained": "Positional embeddings (untrained: random)",
    "sinusoidal": "Sinusoidal positional encodings (fixed, not learned)",
}


def positional_heatmap_figure(W_pos, tokens: list[str] | None = None, kind: str = "learned") -> Figure:
    """W_pos [P, D] position vectors -> positions × d_model heatmap, diverging around 0; kind (a key of
    POSITION_TABLE_TITLES) says in the title what the table is.

    With tokens (len P) the rows are labelled index:token, else by position number."""
    values = compact(W_pos, 3)
    n_pos = values.shape[0]
    rows = index_labels(tokens) if tokens is not None and len(tokens) == n_pos else [str(p) for p in range(n_pos)]
    half = symmetric_range(values)
    fig = Figure(heatmap(
        z=values, y=rows, colorscale=DIVERGING_SCALE, zmid=0, zmin=-half, zmax=half,
        colorbar=dict(title=dict(text="value", side="right")),
        hovertemplate="position %{y}<br>dim %{x}<br>value %{z:.3f}<extra></extra>"))
    fig.update_xaxes(title_text="d_model dimension")
    fig.update_yaxes(**position_axis("position"), autorange="reversed")
    title = f"{POSITION_TABLE_TITLES[kind]}: first {n_pos} positions"
    return style_figure(fig, title, height=int(np.clip(8 * n_pos + 160, 360, 720)), margin=dict(l=80))


NO_POSITION_VECTORS = {
    "rope": "rotary: no position vectors to show (positions rotate q and k inside attention)",
    "none": "no positional embedding: only the causal mask tells positions apart",
}


def no_positions_figure(positional: str, title: str) -> Figure:
    """An empty panel saying why a model with rope or no positional encoding has no position vectors."""
    return note_figure(NO_POSITION_VECTORS.get(positional, "no position vectors to show"), title)


def embedding_norms_figure(tok_norms, pos_norms, tokens: list[str]) -> Figure:
    """[T] L2 norms per position -> token vs positional embedding sizes, means in the legend."""
    series = [("token embedding", tok_norms), ("position embedding", pos_norms)]
    return position_lines_figure(series, tokens, "Token vs position embedding norms", "L2 norm")
