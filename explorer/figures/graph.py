"""Attribution graphs: nodes placed by layer (rows: token embeddings at the bottom, the layers, the logits on top)
and prompt position (columns), edges drawn with a width by |weight| and a colour by sign; the top logits before
and after an intervention; a QK attribution's query-side x key-side pairs. Pure functions of arrays and strings."""
from dataclasses import dataclass

import numpy as np

from explorer.figures.common import (
    BLUE,
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
TOKEN_COLUMN = 0.35  # x units of a column with only its token's node
BUSY_NODES = 6  # a column with features is one unit wide, or a unit per BUSY_NODES nodes of its busiest cell ...
WIDEST_COLUMN = 5  # ... up to this many units
ROW_PX = 105  # px per row (embeddings, each layer, logits)
BAND = 0.34  # a cell's nodes stack within this many rows above and below their row's line
ACROSS = 10  # a cell's nodes stand at most this many side by side within their column
NAME_PX = 30  # px a node's drawn name (two lines) takes above it
NAME_ACROSS_PX = 80  # px across a node's drawn name takes
LOGIT_PITCH_PX = 22  # px between two logits, stacked right of the last column
LOGIT_ROOM_PX = 100  # px right of the last column for the logits and their labels ("“␣” 95%")
MORE_COLOUR = "#555"  # the "+N" of a cell with more nodes than it can draw
ROOMY_TICK_PX = 26  # px between column centres from which every column's label is quoted
TICK_CHAR_PX = 8  # px a character of a column label takes, to leave out labels that would overlap
MAX_MARKER = 24  # px: the most influential node's marker, where its cell has room
MIN_MARKER = 8  # px: the least influential node's marker, never smaller
HOVER_MARKER = 6  # px: the invisible marker at an edge's middle that names it on hover
ROW_LABELS_PX = 110  # px the row labels ("token embeddings") take left of the plot
SHADE = "rgba(0,0,0,0.035)"  # every other column's background


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


@dataclass
class Places:
    """Where the graph's nodes are drawn: x in column units, y in rows (row r+1 is layer r, 0 the embeddings)."""
    x: np.ndarray  # [n] each node's centre (a hidden node's: its cell's "+N")
    y: np.ndarray  # [n]
    size: np.ndarray  # [n] px: its marker's diameter
    hidden: np.ndarray  # [n] bool: left out of a full cell, counted in its "+N"
    centres: np.ndarray  # [T] each column's centre
    widths: np.ndarray  # [T] each column's width (0: no column)
    per_unit: float  # px per x unit
    row_px: float  # px per row


def row_labels(n_layers: int) -> list[str]:
    """The rows' names, bottom to top."""
    return ["token embeddings"] + [f"layer {layer}" for layer in range(n_layers)] + ["logits"]


def _cells(d: GraphDrawing) -> dict:
    """{(layer, position): its nodes' indices, the most influential first}, logits left out."""
    cells = {}
    for i in np.lexsort((-np.asarray(d.influence), d.positions, d.layers)):
        if d.kinds[i] != "logit":
            cells.setdefault((int(d.layers[i]), int(d.positions[i])), []).append(int(i))
    return cells


def column_widths(d: GraphDrawing, cells: dict) -> np.ndarray:
    """[T] x units of each column: a token's alone TOKEN_COLUMN, one with features or errors one unit or more."""
    T = len(d.columns)
    width = np.full(T, TOKEN_COLUMN) if d.every_column else np.zeros(T)
    named = any(d.names[i] for i in range(len(d.kinds)) if d.kinds[i] != "logit")
    for (layer, pos), nodes in cells.items():
        busy = len(nodes) / (2 if named else BUSY_NODES)  # a named node needs room across for its name
        wide = float(np.clip(busy, 1, WIDEST_COLUMN)) if layer >= 0 or named else TOKEN_COLUMN
        width[pos] = max(width[pos], wide)
    width[-1] = max(width[-1], 1)  # the last column, beside the logits
    return width


def _cell_grid(n: int, column_px: float, band_px: float, name_px: float) -> tuple[int, int, float, int]:
    """(nodes across, nodes down, marker px, nodes drawn) for a cell of n nodes in column_px x band_px: the largest
    marker that fits every node; else as many at MIN_MARKER as fit above two rows left for the "+N"."""
    best = (1, n, 0.0)
    for across in range(1, ACROSS + 1):
        down = int(np.ceil(n / across))
        pitch_across = column_px / across
        if name_px and across > 1 and pitch_across < NAME_ACROSS_PX:
            break
        size = min(MAX_MARKER, 0.9 * pitch_across, band_px / down - name_px)
        if size > best[2]:
            best = (across, down, size)
        if down == 1:
            break
    if best[2] >= MIN_MARKER:
        return best[0], best[1], best[2], n
    across = int(max(1, min(ACROSS, 0.9 * column_px // MIN_MARKER)))
    down = int(max(3, band_px // (MIN_MARKER + name_px)))
    if across * down >= n:  # a narrow column: its markers touch, none left out
        return across, int(np.ceil(n / across)), MIN_MARKER, n
    return across, down, MIN_MARKER, across * (down - 2)  # the bottom two rows hold the "+N"


def node_places(d: GraphDrawing, chart_px: int = WIDE_CHART, row_px: float = ROW_PX) -> Places:
    """Each node inside its own column and its row's band (a crowded cell stacks its nodes down, smaller, and
    counts those it cannot draw in a "+N"); logits stacked right of the last column, in the top row."""
    cells, n = _cells(d), len(d.kinds)
    width = column_widths(d, cells)
    for _ in range(3):  # narrow token columns widened until two tokens' markers (and labels) stand apart
        starts = np.concatenate([[0.0], np.cumsum(width + GAP * (width > 0))[:-1]])
        per_unit = (chart_px - MARGIN["l"] - MARGIN["r"] - ROW_LABELS_PX - LOGIT_ROOM_PX) / (starts[-1] + width[-1] + 1)
        narrow = (width > 0) & (width < (MIN_MARKER + 4) / per_unit - GAP)
        width[narrow] = min((MIN_MARKER + 4) / per_unit - GAP, 1.0)
    centres = starts + width / 2
    x, y = np.zeros(n), d.layers.astype(np.float64) + 1
    size, hidden = np.full(n, float(MIN_MARKER)), np.zeros(n, dtype=bool)
    band_px = 2 * BAND * row_px * 0.9  # rows come a little closer than row_px in the drawn chart
    for (_, pos), nodes in cells.items():
        name_px = NAME_PX if any(d.names[i] for i in nodes) else 0
        across, down, marker, drawn = _cell_grid(len(nodes), width[pos] * per_unit, band_px, name_px)
        for k, i in enumerate(nodes):
            row, col = divmod(min(k, drawn), across)  # the hidden ones sit at the "+N", centred below the rest
            row, in_row = (row + 0.5, 1) if k >= drawn else (row, min(across, drawn - row * across))
            x[i] = centres[pos] + (col - (in_row - 1) / 2) * width[pos] / across
            y[i] += (((down - 1) / 2 - row) * (marker + name_px) - name_px / 2) / row_px
            size[i] = max(MIN_MARKER, marker * (0.55 + 0.45 * np.sqrt(np.clip(d.influence[i], 0, 1))))
            hidden[i] = k >= drawn
    logits = [i for i in np.argsort(-np.asarray(d.influence)) if d.kinds[i] == "logit"]
    pitch = LOGIT_PITCH_PX / row_px
    top = d.n_layers + 1 + max((len(logits) - 1) * pitch / 2, (len(logits) - 1) * pitch - BAND)
    for k, i in enumerate(logits):  # the most probable on top
        x[i] = starts[-1] + width[-1] + GAP + MAX_MARKER / 2 / per_unit
        y[i] = top - k * pitch
        size[i] = max(MIN_MARKER, MAX_MARKER * 0.8 * (0.45 + 0.55 * np.sqrt(np.clip(d.influence[i], 0, 1))))
    return Places(x, y, size, hidden, centres, width, per_unit, row_px)


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


def edge_hover_trace(p: Places, d: GraphDrawing) -> dict:
    """Every edge, named on hover by a small invisible point near its middle (a click sends 'source key>target key').
    Only edges between two positions (those attention carries) get a point, and one that would fall on a node is
    moved along its edge or left out (no coordinates), so that nodes win every hover and click."""
    across = d.positions[d.sources] != d.positions[d.targets]
    spots = np.full((len(d.sources), 2), np.nan)
    spots[across] = midpoints(p, d.sources[across], d.targets[across])
    hint = "<br>click: the head that carries it, and why it attends there" if d.clickable else ""
    text = [f"{d.titles[s]} → {d.titles[t]}<br>weight {w:+.3f}{hint}" for s, t, w in
            zip(d.sources, d.targets, d.weights)]
    return scatter(x=compact(spots[:, 0]), y=compact(spots[:, 1]), mode="markers", name="edges", text=text,
                   marker=dict(size=HOVER_MARKER, opacity=0), hovertemplate="%{text}<extra></extra>",
                   customdata=[f"{d.keys[s]}>{d.keys[t]}" for s, t in zip(d.sources, d.targets)], showlegend=False)


def midpoints(p: Places, sources, targets) -> np.ndarray:
    """[m, 2] (x, y) of a spot on each edge, as near its middle as keeps it off every node (NaN: no such spot)."""
    spots = np.full((len(sources), 2), np.nan)
    scale = np.array([p.per_unit, p.row_px])
    nodes = np.stack([p.x, p.y], 1) * scale  # px
    room = p.size / 2 + HOVER_MARKER / 2 + 2
    todo = np.ones(len(sources), dtype=bool)
    for t in (0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82):
        at = np.stack([p.x[sources] + t * (p.x[targets] - p.x[sources]), p.y[sources] + t * (p.y[targets] -
                                                                                            p.y[sources])], 1)
        free = np.all(np.linalg.norm(at[:, None] * scale - nodes[None], axis=-1) > room[None], axis=1)
        spots[todo & free] = at[todo & free]
        todo &= ~free
        if not todo.any():
            break
    return spots


def node_trace(kind: str, picked: np.ndarray, p: Places, d: GraphDrawing) -> dict:
    """One kind's nodes: a marker sized by influence (or probability), never wider than its place in its cell."""
    influence = np.asarray(d.influence, dtype=np.float64)[picked]
    colour = dict(color=compact(influence), colorscale=FEATURE_SCALE, cmin=0, cmax=1) if kind == "feature" \
        else dict(color=COLOURS[kind])
    names = [d.names[i] for i in picked]
    text = names if any(names) else None
    return scatter(x=compact(p.x[picked]), y=compact(p.y[picked]), mode="markers+text" if text else "markers",
                   cliponaxis=False, name=KIND_NAMES[kind], text=text, textfont=dict(size=SMALL_FONT),
                   textposition="middle right" if kind == "logit" else "top center",
                   customdata=[d.keys[i] for i in picked], hovertext=[d.hovers[i] for i in picked],
                   hovertemplate="%{hovertext}<extra></extra>",
                   marker=dict(size=compact(p.size[picked], 1), symbol=SYMBOLS[kind],
                               line=dict(color="#222", width=1), **colour))


def more_trace(p: Places, d: GraphDrawing) -> dict | None:
    """A "+N" where a full cell left N nodes out; its hover names them (their edges end there)."""
    cells = {}
    for i in np.flatnonzero(p.hidden):
        cells.setdefault((float(p.x[i]), float(p.y[i])), []).append(int(i))
    if not cells:
        return None
    hovers = [f"<b>{len(nodes)} more nodes here</b>, too many to draw:<br>" + "<br>".join(
        d.titles[i] for i in nodes[:12]) + ("<br>…" if len(nodes) > 12 else "") for nodes in cells.values()]
    return scatter(x=[x for x, _ in cells], y=[y for _, y in cells], mode="text", name="more nodes",
                   text=[f"+{len(nodes)}" for nodes in cells.values()], showlegend=False, cliponaxis=False,
                   textfont=dict(size=SMALL_FONT, color=MORE_COLOUR), hovertext=hovers,
                   hovertemplate="%{hovertext}<extra></extra>")


def column_shading(p: Places, top: float) -> dict:
    """Every other column shaded, so that a node's column (its token) reads at a glance."""
    xs, ys = [], []
    drawn = np.flatnonzero(p.widths > 0)
    for c in drawn[::-1][::2]:  # the last column's among them
        left, right = p.centres[c] - p.widths[c] / 2 - GAP / 2, p.centres[c] + p.widths[c] / 2 + GAP / 2
        xs += [left, right, right, left, left, None]
        ys += [-0.5, -0.5, top, top, -0.5, None]
    return scatter(x=xs, y=ys, mode="lines", fill="toself", fillcolor=SHADE, line=dict(width=0), hoverinfo="skip",
                   showlegend=False, name="columns")


def graph_figure(d: GraphDrawing, title: str, chart_px: int = WIDE_CHART, row_px: int = ROW_PX) -> Figure:
    """The graph: shaded columns, edges, their hover points, then the nodes on top (one trace per kind; a click
    sends its key as customdata); rows row_px apart."""
    p = node_places(d, chart_px, row_px)
    top = max(d.n_layers + 1.7, float(np.max(p.y, initial=0)) + 0.35)
    fig = Figure()
    fig.add_trace(column_shading(p, top))
    for t in edge_traces(p.x, p.y, d):
        fig.add_trace(t)
    for t in (edge_hover_trace(p, d) if len(d.weights) else None, more_trace(p, d)):  # under the nodes
        if t is not None:
            fig.add_trace(t)
    for kind in KINDS:
        picked = np.flatnonzero(np.array([k == kind for k in d.kinds], dtype=bool) & ~p.hidden)
        if len(picked):
            fig.add_trace(node_trace(kind, picked, p, d))
    used = np.flatnonzero(p.widths > 0) if not d.every_column else np.arange(len(d.columns))
    labels = column_labels([d.columns[i] for i in used], p.centres[used] * p.per_unit)
    shown = [j for j, label in enumerate(labels) if label is not None]
    fig.update_xaxes(tickmode="array", tickvals=compact(p.centres[used][shown]), showgrid=False, zeroline=False,
                     ticktext=[labels[j] for j in shown], title_text="prompt position (one column per token)",
                     tickangle=0, range=_x_range(p), automargin=True)
    fig.update_yaxes(tickmode="array", tickvals=list(range(d.n_layers + 2)), ticktext=row_labels(d.n_layers),
                     range=[-0.5, top], zeroline=False, automargin=True)
    height = round(row_px * (top + 0.3) + 160)
    return style_figure(fig, title, height=height, chart_width=chart_px, hovermode="closest",
                        legend=top_legend(), clickmode="event", dragmode="pan")


def column_labels(labels: list[str], centres_px) -> list:
    """Each column's label in one style: all between curly quotes where every column has room, else all bare;
    None for a label that would overlap its right neighbour's (the last column's is always drawn)."""
    centres_px = np.asarray(centres_px, dtype=np.float64)
    gaps = np.diff(centres_px)
    quoted = not len(gaps) or float(gaps.min()) >= ROOMY_TICK_PX
    shown, left_edge = [None] * len(labels), np.inf
    for j in range(len(labels) - 1, -1, -1):
        text = f"“{labels[j]}”" if quoted else str(labels[j])
        half = len(text) * TICK_CHAR_PX / 2
        if centres_px[j] + half <= left_edge - 2:
            shown[j], left_edge = text, centres_px[j] - half
    return shown


def _x_range(p: Places) -> list:
    """The x axis's range: every column and node, and room right of the logits for their labels."""
    drawn = np.flatnonzero(p.widths > 0)
    low = min(float(np.min(p.x, initial=0)), float(p.centres[drawn[0]] - p.widths[drawn[0]] / 2)) - 0.5
    right = float(p.centres[-1] + p.widths[-1] / 2) + LOGIT_ROOM_PX / p.per_unit
    return [round(low, 3), round(max(right, float(np.max(p.x, initial=0)) + 0.5), 3)]


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
                          colorscale="RdBu", zmin=-span, zmax=span, texttemplate="%{z:.2f}",  # blue raises, as the graph's edges
                          hovertemplate="query side: %{y}<br>key side: %{x}<br>part of the score %{z:+.3f}"
                                        "<extra></extra>", colorbar=dict(title=dict(text="part", side="right"))))
    fig.update_xaxes(type="category", title_text="key side", automargin=True, tickangle=-30)
    fig.update_yaxes(type="category", title_text="query side", automargin=True, autorange="reversed")
    return style_figure(fig, title, height=max(360, 34 * len(query_parts) + 220), chart_width=WIDE_CHART)
