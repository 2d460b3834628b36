"""Attribution graphs: nodes placed by layer (rows: token embeddings at the bottom, the layers, the logits on top)
and prompt position (columns), edges drawn with a width by |weight| and a colour by sign; the top logits before
and after an intervention; a QK attribution's query-side x key-side pairs. Pure functions of arrays and strings."""
from dataclasses import dataclass

import numpy as np

from explorer.figures.common import (
    BLUE,
    DIVERGING_SCALE,
    GREEN,
    GREY,
    MARGIN,
    ORANGE,
    RED,
    SMALL_FONT,
    WIDE_CHART,
    compact,
    style_figure,
    top_legend,
    visible_tick,
)
from explorer.figures.plain import Figure, bar, heatmap, scatter

KINDS = ("feature", "error", "token", "logit")
KIND_NAMES = {"feature": "features", "error": "errors (what the transcoders miss)", "token": "token embeddings",
              "logit": "logits (top next tokens)"}
SYMBOLS = {"feature": "circle", "error": "diamond", "token": "square", "logit": "hexagon"}
COLOURS = {"error": "#9e9e9e", "token": "#424242", "logit": GREEN}
FEATURE_SCALE = [[0, "#fdd0a2"], [1, "#d94801"]]  # features by influence: light orange to dark orange
EDGE_WIDTHS = (0.6, 1.4, 2.6, 4.2)  # px, for |weight| in the quarters of the largest drawn
GAP = 0.3  # x units between two columns
TOKEN_COLUMN = 0.35  # x units of a column with only its token's node (a node is one unit across)
ROW_PX = 105  # px per row (embeddings, each layer, logits)
LABEL_PX = 34  # px a logit's label ("e" over "23%") needs across
SUB_ROWS = 4  # a busy cell stacks its nodes in up to this many rows ...
SUB_ROW = 0.2  # ... this far apart (in rows)
ROOMY_TICK_PX = 26  # px between column centres from which a thin mark's label is drawn large and quoted
MAX_MARKER = 24  # px: the most influential node's marker, where its column has room
MIN_MARKER = 8  # px: the least influential node's marker, never smaller
ROW_LABELS_PX = 110  # px the row labels ("E (embeddings)") take left of the plot


@dataclass
class GraphDrawing:
    """The nodes and edges to draw, as arrays; node i is drawn at row layers[i] (-1: embeddings, n_layers: logits)."""
    columns: list  # [T] label of each prompt position (visible whitespace)
    n_layers: int
    kinds: list  # [n] "feature", "error", "token" or "logit"
    layers: np.ndarray  # [n] int
    positions: np.ndarray  # [n] int
    influence: np.ndarray  # [n] float, 0..1: the node's share of the influence on the logits
    hovers: list  # [n] hover text
    keys: list  # [n] node ids a click sends back
    titles: list  # [n] node names, for the edges' hover
    sources: np.ndarray  # [m] int indices into the nodes
    targets: np.ndarray  # [m]
    weights: np.ndarray  # [m] float
    names: list  # [n] text drawn beside each node ('' for none)
    every_column: bool = True  # a column for every position (else only for those with nodes)
    clickable: bool = True  # drawn in a chart whose clicks open nodes and edges (hover says so)


def row_labels(n_layers: int) -> list[str]:
    """The rows' names, bottom to top."""
    return ["E (embeddings)"] + [f"layer {layer}" for layer in range(n_layers)] + ["logits"]


def _slots(d: GraphDrawing) -> tuple[np.ndarray, np.ndarray]:
    """([n] each node's slot within its (row, column) cell, the most influential first; [n] the cell's node count)."""
    slot, count = np.zeros(len(d.kinds), dtype=np.int64), np.zeros(len(d.kinds), dtype=np.int64)
    order = np.lexsort((-d.influence, d.positions, d.layers))
    cells = [(d.layers[i], d.positions[i]) for i in order]
    for j, i in enumerate(order):
        slot[i] = slot[order[j - 1]] + 1 if j and cells[j] == cells[j - 1] else 0
    for j in range(len(order) - 1, -1, -1):
        i = order[j]
        count[i] = count[order[j + 1]] if j + 1 < len(order) and cells[j] == cells[j + 1] else slot[i] + 1
    return slot, count


def cell_grid(count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sub-rows [n], slots across [n]) of each node's cell: a busy cell stacks its nodes in up to SUB_ROWS rows."""
    rows = np.where(count <= 3, 1, np.minimum(SUB_ROWS, np.ceil(count / 3))).astype(np.int64)
    return rows, np.ceil(count / rows).astype(np.int64)


def node_places(d: GraphDrawing, chart_px: int = WIDE_CHART) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(x [n], y [n], column centres [T], px per x unit): a column is as wide as its busiest cell (logits excepted,
    which spread leftwards from the last column along the top row, far enough apart for their labels)."""
    T, n = len(d.columns), len(d.kinds)
    is_logit = np.array([k == "logit" for k in d.kinds], dtype=bool)
    slot, count = _slots(d)
    rows, across = cell_grid(count)
    width = np.full(T, TOKEN_COLUMN) if d.every_column else np.zeros(T)
    for i in np.flatnonzero(~is_logit & (np.array(d.kinds) != "token")):
        width[d.positions[i]] = max(width[d.positions[i]], across[i])
    width[(width == 0) & np.isin(np.arange(T), d.positions)] = TOKEN_COLUMN
    width[-1] = max(width[-1], 1)  # the logits' column
    starts = np.concatenate([[0.0], np.cumsum(width + GAP * (width > 0))[:-1]])
    centres = starts + width / 2
    per_unit = (chart_px - MARGIN["l"] - MARGIN["r"] - ROW_LABELS_PX) / max(starts[-1] + width[-1] + 2, 1.0)
    x, y = np.zeros(n), d.layers.astype(np.float64) + 1
    inner = ~is_logit
    sub, along = slot // across, slot % across
    in_row = np.minimum(across, count - sub * across)  # nodes in the node's own sub-row
    x[inner] = (centres[d.positions] + along - (in_row - 1) / 2)[inner]
    y[inner] += ((sub - (rows - 1) / 2) * SUB_ROW)[inner]
    if is_logit.any():
        x[is_logit] = centres[-1] - max(1.0, LABEL_PX / per_unit) * slot[is_logit]
    return x, y, centres, per_unit


def edge_traces(x, y, d: GraphDrawing) -> list:
    """One line trace per (sign, width band), segments separated by gaps; largest weights drawn last."""
    traces, weights = [], np.asarray(d.weights, dtype=np.float64)
    top = float(np.abs(weights).max()) if len(weights) else 1.0
    band = np.minimum((np.abs(weights) / max(top, 1e-12) * len(EDGE_WIDTHS)).astype(int), len(EDGE_WIDTHS) - 1)
    for b, width in enumerate(EDGE_WIDTHS):
        for positive, colour in ((True, BLUE), (False, RED)):
            picked = np.flatnonzero((band == b) & ((weights > 0) == positive))
            if not len(picked):
                continue
            xs = np.stack([x[d.sources[picked]], x[d.targets[picked]], np.full(len(picked), np.nan)], 1).ravel()
            ys = np.stack([y[d.sources[picked]], y[d.targets[picked]], np.full(len(picked), np.nan)], 1).ravel()
            name = f"edge lines, {'raising' if positive else 'lowering'}, width band {b + 1} of {len(EDGE_WIDTHS)}"
            traces.append(scatter(x=compact(xs), y=compact(ys), mode="lines", hoverinfo="skip", showlegend=False,
                                  name=name, line=dict(color=colour, width=width), opacity=0.25 + 0.18 * b))
    return traces


def edge_hover_trace(x, y, d: GraphDrawing) -> dict:
    """Invisible points at each edge's middle that name its ends and weight on hover (a click sends
    'source key>target key')."""
    hint = "<br>click: the head that carries it, and why it attends there" if d.clickable else ""
    text = [f"{d.titles[s]} → {d.titles[t]}<br>weight {w:+.3f}{hint if d.positions[s] != d.positions[t] else ''}"
            for s, t, w in zip(d.sources, d.targets, d.weights)]
    return scatter(x=compact((x[d.sources] + x[d.targets]) / 2), y=compact((y[d.sources] + y[d.targets]) / 2),
                   mode="markers", marker=dict(size=8, opacity=0), text=text, name="edges",
                   customdata=[f"{d.keys[s]}>{d.keys[t]}" for s, t in zip(d.sources, d.targets)],
                   hovertemplate="%{text}<extra></extra>", showlegend=False)


def node_trace(kind: str, picked: np.ndarray, x, y, d: GraphDrawing, per_unit: float) -> dict:
    """One kind's nodes: a marker sized by influence, never wider than the room between two nodes of a row."""
    influence = np.asarray(d.influence, dtype=np.float64)[picked]
    spacing = per_unit * (TOKEN_COLUMN + GAP if kind == "token" else 1.0)  # px between two such nodes of a row
    largest = float(np.clip(0.95 * spacing, MIN_MARKER, MAX_MARKER))
    size = np.maximum(MIN_MARKER, largest * (0.55 + 0.45 * np.sqrt(np.clip(influence, 0, 1))))
    colour = dict(color=compact(influence), colorscale=FEATURE_SCALE, cmin=0, cmax=1) if kind == "feature" \
        else dict(color=COLOURS[kind])
    names = [d.names[i] for i in picked]
    text = names if any(names) else None
    return scatter(x=compact(x[picked]), y=compact(y[picked]), mode="markers+text" if text else "markers",
                   cliponaxis=False, name=KIND_NAMES[kind], text=text, textposition="top center", textfont=dict(size=SMALL_FONT),
                   customdata=[d.keys[i] for i in picked], hovertext=[d.hovers[i] for i in picked],
                   hovertemplate="%{hovertext}<extra></extra>",
                   marker=dict(size=compact(size, 1), symbol=SYMBOLS[kind], line=dict(color="#222", width=1),
                               **colour))


def graph_figure(d: GraphDrawing, title: str, chart_px: int = WIDE_CHART, row_px: int = ROW_PX) -> Figure:
    """The graph: edges under the nodes, one trace per kind of node (a click sends its key as customdata); rows
    row_px apart."""
    x, y, centres, per_unit = node_places(d, chart_px)
    fig = Figure()
    for t in edge_traces(x, y, d):
        fig.add_trace(t)
    if len(d.weights):
        fig.add_trace(edge_hover_trace(x, y, d))
    for kind in KINDS:
        picked = np.flatnonzero(np.array([k == kind for k in d.kinds], dtype=bool))
        if len(picked):
            fig.add_trace(node_trace(kind, picked, x, y, d, per_unit))
    used = list(range(len(d.columns)) if d.every_column else sorted(set(d.positions.tolist())))
    fig.update_xaxes(tickmode="array", tickvals=compact(centres[used]), showgrid=False, zeroline=False,
                     ticktext=column_labels([d.columns[p] for p in used], centres[used] * per_unit),
                     title_text="prompt position (one column per token)",
                     tickangle=0, range=_x_range(x, centres), automargin=True)
    fig.update_yaxes(tickmode="array", tickvals=list(range(d.n_layers + 2)), ticktext=row_labels(d.n_layers),
                     range=[-0.5, d.n_layers + 1.7], zeroline=False, automargin=True)
    return style_figure(fig, title, height=row_px * (d.n_layers + 2) + 160, chart_width=chart_px, hovermode="closest",
                        legend=top_legend(), clickmode="event", dragmode="pan")


def column_labels(labels: list[str], centres_px) -> list[str]:
    """Each column's label, a thin mark drawn large and quoted (visible_tick) where its neighbours leave room."""
    gaps = np.diff(np.asarray(centres_px, dtype=np.float64))
    room = np.minimum(np.append(gaps, np.inf), np.insert(gaps, 0, np.inf)) if len(gaps) else np.array([np.inf])
    return [visible_tick(label) if r >= ROOMY_TICK_PX else label for label, r in zip(labels, room)]


def _x_range(x, centres) -> list:
    """The x axis's range: every node and column, and a unit to spare on each side."""
    low = min(float(np.min(x, initial=0)), float(centres[0]))
    high = max(float(np.max(x, initial=0)), float(centres[-1]))
    return [round(low - 1, 3), round(high + 1, 3)]


def top_logits_figure(tokens: list[str], series: list[tuple[str, np.ndarray]], title: str) -> Figure:
    """Grouped bars: each token's probability (tokens [k]) in each series [(name, probabilities [k])]."""
    fig = Figure()
    for (name, probs), colour in zip(series, (GREY, BLUE, ORANGE)):
        fig.add_trace(bar(x=list(tokens), y=compact(probs), name=name, marker_color=colour, texttemplate="%{y:.0%}",
                          textposition="outside", cliponaxis=False,
                          hovertemplate=f"{name}<br>%{{x}}: %{{y:.1%}}<extra></extra>"))
    fig.update_xaxes(type="category", title_text="next token")
    fig.update_yaxes(title_text="probability", tickformat=".0%", range=[0, 1.12], tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1])
    return style_figure(fig, title, height=380, barmode="group", legend=top_legend())


def qk_pairs_figure(query_parts: list[str], key_parts: list[str], products, title: str) -> Figure:
    """products [q, k]: the score's part from each query-side part (rows) with each key-side part (columns)."""
    z = compact(products)
    span = float(np.abs(z).max()) if z.size else 1.0
    fig = Figure()
    fig.add_trace(heatmap(z=z, x=[f"{k} " for k in key_parts], y=[f"{q} " for q in query_parts],
                          colorscale=DIVERGING_SCALE, zmin=-span, zmax=span, texttemplate="%{z:.2f}",
                          hovertemplate="query side: %{y}<br>key side: %{x}<br>part of the score %{z:+.3f}"
                                        "<extra></extra>", colorbar=dict(title=dict(text="part", side="right"))))
    fig.update_xaxes(type="category", title_text="key side", automargin=True, tickangle=-30)
    fig.update_yaxes(type="category", title_text="query side", automargin=True, autorange="reversed")
    return style_figure(fig, title, height=max(360, 34 * len(query_parts) + 220), chart_width=WIDE_CHART)
