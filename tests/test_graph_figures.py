"""The attribution graph's figure on constructed arrays: every node drawn once (or named by its cell's "+N"), in its
row and inside its own column; no two node markers overlapping even in a crowded cell of a 63-token prompt; the
logits right of the last column; no edge's hover point on a node."""
import numpy as np
import pytest

from explorer.figures.common import WIDE_CHART
from explorer.figures.graph import GraphDrawing, graph_figure, node_places
from tests.helpers import assert_plotly_would_send_the_same

KIND_TRACES = ("features", "errors (what the transcoders miss)", "token embeddings", "logits (top next tokens)")


def crowded(T: int = 64, in_last_cell: int = 40, n_layers: int = 4) -> GraphDrawing:
    """Token nodes at every position, in_last_cell features in each layer at the last position, a few at position 3,
    two logits, and an edge from every feature to the first logit."""
    kinds, layers, positions = ["token"] * T, [-1] * T, list(range(T))
    for layer in range(n_layers):
        kinds += ["feature"] * (in_last_cell + 2)
        layers += [layer] * (in_last_cell + 2)
        positions += [T - 1] * in_last_cell + [3, 3]
    kinds += ["logit", "logit"]
    layers += [n_layers, n_layers]
    positions += [T - 1, T - 1]
    n = len(kinds)
    features = [i for i, k in enumerate(kinds) if k == "feature"]
    rng = np.random.default_rng(0)
    return GraphDrawing(columns=["a"] * T, n_layers=n_layers, kinds=kinds, layers=np.array(layers),
                        positions=np.array(positions), influence=rng.random(n), hovers=[""] * n,
                        keys=[f"k{i}" for i in range(n)], titles=[f"t{i}" for i in range(n)],
                        sources=np.array(features), targets=np.full(len(features), n - 2),
                        weights=rng.normal(size=len(features)), names=[""] * n)


@pytest.mark.parametrize("T, in_last_cell", [(64, 40), (29, 12), (9, 6)])
def test_every_node_is_drawn_once_in_its_row_and_column(T, in_last_cell):
    d = crowded(T, in_last_cell)
    fig = graph_figure(d, "crowded").to_plotly_json()
    keys = [k for t in fig["data"] if t.get("name") in KIND_TRACES for k in t["customdata"]]
    p = node_places(d)
    hidden = [k for k, h in zip(d.keys, p.hidden) if h]
    assert sorted(keys + hidden) == sorted(d.keys) and len(set(keys) & set(hidden)) == 0
    more = [t for t in fig["data"] if t.get("name") == "more nodes"]
    assert sum(int(text[1:]) for t in more for text in t["text"]) == len(hidden)  # "+N" counts the rest
    assert (T, bool(hidden)) != (9, True)  # a short prompt's cells draw every node
    inner = np.array([k != "logit" for k in d.kinds])
    assert np.all(np.abs(p.y - (d.layers + 1))[inner] < 0.5)  # each node within its row
    left = p.centres[d.positions] - p.widths[d.positions] / 2
    right = p.centres[d.positions] + p.widths[d.positions] / 2
    assert np.all(((p.x >= left - 1e-6) & (p.x <= right + 1e-6))[inner])  # ... and its own column
    assert len(p.centres) == len(d.columns) and np.all(np.diff(p.centres) > 0)
    logits = ~inner  # right of the last column, in the logits row's band
    assert np.all(p.x[logits] > right.max()) and np.all(np.abs(p.y[logits] - (d.n_layers + 1)) < 1)


def test_edge_hover_points_keep_off_the_nodes():
    d = crowded(29, 12)
    fig = graph_figure(d, "crowded").to_plotly_json()
    p = node_places(d)
    edges = next(t for t in fig["data"] if t.get("name") == "edges")
    names = [t.get("name") for t in fig["data"]]
    assert names.index("edges") < min(names.index(n) for n in KIND_TRACES if n in names)  # nodes drawn on top
    assert len(edges["customdata"]) == len(d.weights)  # every edge listed ...
    spots = np.stack([np.asarray(edges["x"], float) * p.per_unit, np.asarray(edges["y"], float) * p.row_px], 1)
    placed = ~np.isnan(spots[:, 0])  # ... a hover point for those between two positions, off every node
    across = d.positions[d.sources] != d.positions[d.targets]
    assert not np.any(placed & ~across) and placed.sum() >= 0.8 * across.sum()
    nodes = np.stack([p.x * p.per_unit, p.y * p.row_px], 1)
    distance = np.linalg.norm(spots[placed][:, None] - nodes[None], axis=-1)
    assert np.all(distance > p.size[None] / 2 + edges["marker"]["size"] / 2)


@pytest.mark.slow
def test_plotly_would_draw_the_same_graph():
    assert_plotly_would_send_the_same(graph_figure(crowded(T=8, in_last_cell=5), "small"))


def test_no_two_markers_overlap_in_a_crowded_cell():
    d = crowded()
    fig = graph_figure(d, "crowded").to_plotly_json()
    p = node_places(d, WIDE_CHART)
    size, drawn = np.zeros(len(d.keys)), np.zeros(len(d.keys), dtype=bool)
    for t in fig["data"]:
        if t.get("name") in KIND_TRACES:
            sizes = np.broadcast_to(np.asarray(t["marker"]["size"], dtype=float), (len(t["customdata"]),))
            for key, s in zip(t["customdata"], sizes):
                size[d.keys.index(key)], drawn[d.keys.index(key)] = s, True
    px = np.stack([p.x * p.per_unit, p.y * p.row_px], 1)[drawn]
    size = size[drawn]
    distance = np.linalg.norm(px[:, None] - px[None], axis=-1) + np.eye(len(px)) * 1e9
    needed = (size[:, None] + size[None]) / 2
    assert np.all(distance >= 0.95 * needed), float((distance / needed).min())
