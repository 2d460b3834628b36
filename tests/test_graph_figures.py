"""The attribution graph's figure on constructed arrays: every node and edge drawn once, in its row and column, and
no two node markers overlapping even in a crowded cell of a 63-token prompt."""
import numpy as np
import pytest

from explorer.figures.common import WIDE_CHART
from explorer.figures.graph import ROW_PX, GraphDrawing, graph_figure, node_places
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


def test_every_node_and_edge_is_drawn_once_in_its_row():
    d = crowded()
    fig = graph_figure(d, "crowded").to_plotly_json()
    keys = [k for t in fig["data"] if t.get("name") in KIND_TRACES for k in t["customdata"]]
    assert sorted(keys) == sorted(d.keys)
    assert len(next(t for t in fig["data"] if t.get("name") == "edges")["customdata"]) == len(d.weights)
    x, y, centres, _ = node_places(d)
    assert np.all(np.abs(y - (d.layers + 1)) < 0.5)  # each node within its row
    assert len(centres) == len(d.columns) and np.all(np.diff(centres) > 0)


@pytest.mark.slow
def test_plotly_would_draw_the_same_graph():
    assert_plotly_would_send_the_same(graph_figure(crowded(T=8, in_last_cell=5), "small"))


def test_no_two_markers_overlap_in_a_crowded_cell():
    d = crowded()
    fig = graph_figure(d, "crowded").to_plotly_json()
    x, y, _, per_unit = node_places(d, WIDE_CHART)
    size = np.zeros(len(d.keys))
    for t in fig["data"]:
        if t.get("name") in KIND_TRACES:
            sizes = np.broadcast_to(np.asarray(t["marker"]["size"], dtype=float), (len(t["customdata"]),))
            for key, s in zip(t["customdata"], sizes):
                size[d.keys.index(key)] = s
    px = np.stack([x * per_unit, y * ROW_PX], 1)
    distance = np.linalg.norm(px[:, None] - px[None], axis=-1) + np.eye(len(px)) * 1e9
    needed = (size[:, None] + size[None]) / 2
    assert np.all(distance >= 0.95 * needed), float((distance / needed).min())
