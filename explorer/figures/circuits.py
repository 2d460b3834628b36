"""Circuits of a head read off the weights (model_core.analysis.circuits): its OV and QK circuits over a few
tokens, the positional QK circuit, the composition of heads across layers, copying scores, and the induction
circuit drawn as previous-token head -> induction head."""
import numpy as np

from explorer.figures.common import (
    BLUE,
    CHART_WIDTH,
    DIVERGING_SCALE,
    FONT_SIZE,
    GREY,
    MAGNITUDE_SCALE,
    RED,
    WIDE_CHART,
    compact,
    head_label,
    index_labels,
    labelled_rows_height,
    style_figure,
    symmetric_range,
    top_legend,
)
from explorer.figures.label_places import Taken, beside, marker_boxes, text_box, x_pixels, y_pixels
from explorer.figures.plain import Figure, heatmap, scatter


def token_circuit_figure(values, rows: list[str], cols: list[str], title: str, row_title: str, col_title: str,
                         value_name: str) -> Figure:
    """values [S, S'] (one head's OV or QK circuit over a few tokens) -> diverging heatmap centred at 0."""
    r = symmetric_range(values)
    fig = Figure(heatmap(z=compact(values, 3), x=index_labels(cols), y=index_labels(rows), colorscale=DIVERGING_SCALE,
                         zmin=-r, zmax=r, colorbar=dict(title=dict(text=value_name, side="right"), thickness=14),
                         hovertemplate=f"{row_title} %{{y}}<br>{col_title} %{{x}}<br>{value_name} %{{z:.3f}}"
                                       "<extra></extra>"))
    fig.update_xaxes(title_text=col_title, type="category")
    fig.update_yaxes(title_text=row_title, type="category", autorange="reversed")
    height = max(380, labelled_rows_height(len(rows), index_labels(cols)))
    return style_figure(fig, title, height=height, chart_width=WIDE_CHART)


def positional_figure(values, layer: int, head: int) -> Figure:
    """values [P, P] the positional QK circuit (NaN above the diagonal)."""
    r = symmetric_range(values)
    fig = Figure(heatmap(z=compact(values, 3), colorscale=DIVERGING_SCALE, zmin=-r, zmax=r,
                         colorbar=dict(title=dict(text="score", side="right"), thickness=14),
                         hovertemplate="query position %{y}<br>key position %{x}<br>score %{z:.3f}<extra></extra>"))
    fig.update_xaxes(title_text="key position")
    fig.update_yaxes(title_text="query position", autorange="reversed")
    return style_figure(fig, f"{head_label(layer, head)}: the score from positions alone (W_pos W_Q W_Kᵀ W_posᵀ)",
                        height=420)


def composition_figure(scores, kind: str) -> Figure:
    """scores [L, H, L, H] -> heatmap with the earlier head on the y axis and the later head on the x axis; pairs
    whose second layer is not later are blank."""
    L, H = scores.shape[:2]
    labels = [head_label(layer, h) for layer in range(L) for h in range(H)]
    z = compact(scores.reshape(L * H, L * H), 3)
    later = np.repeat(np.arange(L), H)
    z[later[:, None] >= later[None, :]] = np.nan
    name = {"q": "Q", "k": "K", "v": "V"}[kind]
    fig = Figure(heatmap(z=z, x=labels, y=labels, colorscale=MAGNITUDE_SCALE, zmin=0, zmax=max(float(np.nanmax(z))
                         if np.isfinite(z).any() else 1.0, 1e-6),
                         colorbar=dict(title=dict(text="score", side="right"), thickness=14),
                         hovertemplate=f"%{{y}} writes, %{{x}} reads it in its {name.lower()}<br>"
                                       f"{name}-composition %{{z:.3f}}<extra></extra>"))
    fig.update_xaxes(title_text=f"later head (reads in its {'query' if kind == 'q' else 'key' if kind == 'k' else 'value'})",
                     type="category")
    fig.update_yaxes(title_text="earlier head (writes)", type="category", autorange="reversed")
    return style_figure(fig, f"{name}-composition of every head with the heads of later layers",
                        height=max(420, 200 + 14 * L * H))


def copying_figure(scores) -> Figure:
    """scores [L, H] copying scores in [-1, 1]."""
    L, H = scores.shape
    text = [[f"{scores[layer, h]:+.2f}" for h in range(H)] for layer in range(L)]
    fig = Figure(heatmap(z=compact(scores, 3), x=[f"H{h}" for h in range(H)], y=[f"L{layer}" for layer in range(L)],
                         zmin=-1, zmax=1, colorscale=DIVERGING_SCALE, text=text,
                         texttemplate="%{text}" if L * H <= 64 else None, xgap=2, ygap=2,
                         colorbar=dict(title=dict(text="copying", side="right"), thickness=14),
                         hovertemplate="layer %{y}, head %{x}<br>copying score %{z:.2f}<extra></extra>"))
    fig.update_xaxes(title_text="head", type="category")
    fig.update_yaxes(title_text="layer", type="category", autorange="reversed")
    return style_figure(fig, "Copying score of each head (Σλ / Σ|λ| of its OV circuit)", height=160 + 40 * L,
                        chart_width=WIDE_CHART)


def induction_circuit_figure(n_layers: int, n_heads: int, previous: dict, induction: dict, links: list) -> Figure:
    """Heads as dots (layer across, head down); previous-token heads blue, induction heads red, each link
    (earlier layer, head, later layer, head, K-composition) an arrow labelled with its score, the label on the
    arrow where it covers no head, head name or other label (edge_label_places)."""
    fig = Figure()
    xs = [layer for layer in range(n_layers) for _ in range(n_heads)]
    ys = [h for _ in range(n_layers) for h in range(n_heads)]
    names = [head_label(a, b) for a, b in zip(xs, ys)]
    colour = [BLUE if (layer, h) in previous else RED if (layer, h) in induction else GREY
              for layer, h in zip(xs, ys)]
    hover = [f"{head_label(layer, h)}: previous-token {previous.get((layer, h), 0):.2f}, induction "
             f"{induction.get((layer, h), 0):.2f}" for layer, h in zip(xs, ys)]
    for l1, h1, l2, h2, score in links:
        fig.add_annotation(x=l2, y=h2, ax=l1, ay=h1, xref="x", yref="y", axref="x", ayref="y", showarrow=True,
                           arrowhead=3, arrowwidth=1 + 6 * score, arrowcolor="rgba(80,80,80,0.7)", text="")
    fig.add_trace(scatter(x=xs, y=ys, mode="markers+text", text=names, textposition="middle right",
                          marker=dict(size=NODE_PX, color=colour, line=dict(width=1)),
                          customdata=hover, hovertemplate="%{customdata}<extra></extra>", showlegend=False))
    for name, c in (("previous-token head", BLUE), ("induction head", RED)):
        fig.add_trace(scatter(x=[None], y=[None], mode="markers", name=name, marker=dict(size=12, color=c)))
    x_range, y_range = [-0.5, n_layers - 0.2], [n_heads - 0.5, -0.5]  # head 0 on top
    fig.update_xaxes(title_text="layer", tickvals=list(range(n_layers)), range=x_range)
    fig.update_yaxes(title_text="head", tickvals=list(range(n_heads)), range=y_range)
    fig = style_figure(fig, "The induction circuit: previous-token head → induction head (arrow: K-composition)",
                       height=210 + 50 * n_heads, legend=top_legend(), margin=dict(t=90))
    return label_links(fig, links, list(zip(xs, ys, names)), x_range, y_range)


def label_links(fig: Figure, links: list, heads: list, x_range, y_range) -> Figure:
    """Each link's 'K 0.33' on its arrow, at edge_label_places; heads [(layer, head, name)] are the dots (the plot:
    a CHART_WIDTH chart less its margins)."""
    margin = fig.layout.margin
    width, height = CHART_WIDTH - margin.l - margin.r, fig.layout.height - margin.t - margin.b

    def px(layer, head) -> tuple[float, float]:  # y_range is reversed: head 0 on top
        return float(x_pixels(layer, x_range, width)), float(y_pixels(head, y_range[::-1], height, True))

    nodes = [(*px(layer, head), name) for layer, head, name in heads]
    edges = [(px(l1, h1), px(l2, h2), f"K {score:.2f}") for l1, h1, l2, h2, score in links]
    for (l1, h1, l2, h2, _), (*_, text), t in zip(links, edges, edge_label_places(nodes, edges, width, height)):
        fig.add_annotation(x=l1 + t * (l2 - l1), y=h1 + t * (h2 - h1), text=text, showarrow=False,
                           bgcolor="white", font=dict(size=EDGE_FONT))
    return fig


NODE_PX, EDGE_FONT = 18, 12  # a head's dot, an arrow's label
EDGE_SPOTS = (0.5, 0.4, 0.6, 0.3, 0.7, 0.25, 0.75, 0.2, 0.8)  # where along an arrow its label may go, in this order


def edge_label_places(nodes: list, edges: list, width: float, height: float) -> list[float]:
    """Where along each edge its label goes (0: its start, 1: its end): the first of EDGE_SPOTS at which the label
    covers no node, node name or label placed before, the middle when none is free. nodes [(x, y, name)] and
    edges [((x0, y0), (x1, y1), label)] in px of a plot width × height (a name right of its node)."""
    taken = Taken(width, height, [box for x, y, name in nodes
                                  for box in (marker_boxes([x], [y], NODE_PX / 2)[0],
                                              beside(x, y, name, FONT_SIZE, "middle right", NODE_PX / 2))])
    places = []
    for (x0, y0), (x1, y1), text in edges:
        boxes = {t: text_box(x0 + t * (x1 - x0), y0 + t * (y1 - y0), text, EDGE_FONT) for t in EDGE_SPOTS}
        t = next((t for t, box in boxes.items() if taken.free(box)), 0.5)
        taken.take(boxes[t])
        places.append(t)
    return places
