"""The Graph tab's callbacks on the shipped Shakespeare model and its shipped transcoders: the chart draws exactly the
pruned graph's nodes and edges, a node's view reads its feature, pins and supernodes make a subgraph, an intervention
that changes nothing changes nothing, the QK split and the JSON export work, and bad input gets a sentence."""
import json
import math

import numpy as np
import pytest

from explorer.callbacks import graph as G
from explorer.callbacks import graph_edits as E
from explorer.callbacks.features import LOGIT_TOKENS
from explorer.callbacks.graph_nodes import node_key
from explorer.callbacks.graph_source import graph_tokens, traced
from explorer.common.errors import UserError
from explorer.state.session import new_session
from model_core.analysis.graph_pruning import prune_graph
from tests.helpers import graph_edges_across, node_position

PROMPT = "ROMEO:\nI will"  # short: the graph of 13 tokens takes a few seconds


@pytest.fixture(scope="module")
def session():
    return new_session("shakespeare")


@pytest.fixture(scope="module")
def drawn(session):
    """(the chart's figure as a dict, scores line, caption, the graph, its pruning) at the default threshold."""
    chart, line, caption = G.attribution_graph_view(session, PROMPT, 0.8)
    graph = traced(session, graph_tokens(session, PROMPT)).graph
    return json.loads(chart), line, caption, graph, prune_graph(graph, node_threshold=0.8)


def traces(fig: dict, *names: str) -> list:
    return [t for t in fig["data"] if t.get("name") in names]


def node_keys(fig: dict) -> list[str]:
    kinds = ("features", "errors (what the transcoders miss)", "token embeddings", "logits (top next tokens)")
    return [key for t in traces(fig, *kinds) for key in t["customdata"]]


def test_the_chart_draws_the_pruned_graphs_nodes_and_edges(drawn):
    fig, line, caption, graph, kept = drawn
    keys = node_keys(fig)
    assert len(keys) == len(set(keys)) == int(kept.node_mask.sum())
    assert len(traces(fig, "edges")[0]["customdata"]) == int(kept.edge_mask.sum())
    assert f"{int(kept.node_mask.sum()):,} of {graph.n_nodes:,} nodes" in line and "Replacement score" in line
    assert "top next token" in caption
    assert fig["layout"]["yaxis"]["ticktext"][0] == "token embeddings" and \
        fig["layout"]["yaxis"]["ticktext"][-1] == "logits"
    assert len(fig["layout"]["xaxis"]["ticktext"]) == graph.n_pos and "⏎" in fig["layout"]["xaxis"]["ticktext"][0]


def test_a_lower_threshold_keeps_fewer_nodes(session, drawn):
    fewer, line, _ = G.attribution_graph_view(session, PROMPT, 0.4)
    assert len(node_keys(json.loads(fewer))) < len(node_keys(drawn[0]))


def test_a_feature_node_reads_like_a_feature_page(session, drawn):
    fig = drawn[0]
    key = traces(fig, "features")[0]["customdata"][0]
    caption, contexts, logits, rows = G.graph_node_view(session, PROMPT, key)
    assert "transcoder feature" in caption and contexts.count("<tr>") > 1
    assert len(logits.to_plotly_json()["data"][0]["y"]) == 2 * LOGIT_TOKENS
    assert rows and {r[0] for r in rows} <= {"from", "to"}
    weights = [abs(r[3]) for r in rows if r[0] == "from"]
    assert weights == sorted(weights, reverse=True)


def test_the_tab_shows_a_nodes_name_and_keeps_its_key_aside(session, drawn):
    """The Node box and the table name nodes as the chart does ("L1 F5 at 3:e"); the keys a row opens stay aside."""
    key = traces(drawn[0], "features")[0]["customdata"][0]
    layer, pos, feature = key.split(":")[1:]
    name, caption, _, _, table, keys = G.graph_node_shown(session, PROMPT, key)
    assert name.startswith(f"L{layer} F{feature} at {pos}:") and name in caption and ":" not in name.split(" ")[0]
    assert table["headers"] == ["direction", "node", "weight"] and table["data"]
    assert all(not str(row[1]).startswith(("F:", "E:", "T:", "L:")) for row in table["data"])
    assert {row[1] for row in table["data"]} <= set(keys) and all(":" in k for k in keys.values())
    other = table["data"][0][1]
    assert G.graph_node_shown(session, PROMPT, keys[other])[0] == other  # a row opens the node it names


def test_the_caption_counts_features_in_words():
    from explorer.teaching.captions_graph import graph_caption
    assert "1 feature explains it" in graph_caption("a", "b", 0.5, "L0 F1 at 1:a", 1)
    assert "no feature holds enough influence" in graph_caption("a", "b", 0.5, "", 0).lower()


def test_pins_and_a_supernode_make_the_subgraph(session, drawn):
    keys = traces(drawn[0], "features")[0]["customdata"][:3]
    pins = E.pin_node(session, PROMPT, keys[0], None)
    top_logit = traces(drawn[0], "logits (top next tokens)")[0]["customdata"][0]
    assert pins["pinned"] == [keys[0], top_logit]  # the first pin brings the top logit: the subgraph has an edge
    for key in keys[1:]:
        pins = E.pin_node(session, PROMPT, key, pins)
    pins = E.group_nodes(pins, keys[1:], "pair")
    loose, editable, fig, caption = E.pinned_view(session, PROMPT, pins)
    assert [k for _, k in loose] == [keys[0], top_logit] and editable[-1][1] == ",".join(keys[1:])
    names = [n for t in fig.to_plotly_json()["data"] if t.get("name") == "features" for n in t["text"]]
    assert len(names) == 2 and "pair" in names and "2 pinned nodes and 1 supernode" in caption
    lone = E.pinned_view(session, PROMPT, {**E.pins_for(None, pins["ids"]), "pinned": keys[:1]})[3]
    assert "pin at least two connected nodes" in lone.lower()
    assert E.pinned_view(session, PROMPT, None)[:2] == ([], [])
    assert E.pins_for(pins, [0, 1]) == {"ids": [0, 1], "pinned": [], "groups": {}}  # another prompt starts empty


def test_scaling_a_feature_by_one_changes_nothing(session, drawn):
    key = traces(drawn[0], "features")[0]["customdata"][0]
    bars, caption = E.graph_intervene(session, PROMPT, key, "multiply by", 1.0)
    before, predicted, real = (np.asarray(t["y"], dtype=float) for t in bars.to_plotly_json()["data"])
    assert np.allclose(before, predicted, atol=1e-3) and np.allclose(before, real, atol=1e-3)
    assert "close to the prediction" in caption


def test_the_qk_split_and_the_head_behind_an_edge(session, drawn):
    edges, n_pos = traces(drawn[0], "edges")[0]["customdata"], drawn[3].n_pos
    edge = graph_edges_across(edges, n_pos)[0]
    layer, head, query, key = E.edge_head(session, PROMPT, edge)
    assert (key, query) == tuple(node_position(k, n_pos) for k in edge.split(">"))
    heatmap, caption, pairs = E.graph_qk(session, PROMPT, layer, head, query, key)
    assert f"L{layer}·H{head}" in caption and heatmap.to_plotly_json()["data"][0]["type"] == "heatmap"
    assert E.edge_qk(session, PROMPT, edge)[:4] == (layer, head, query, key)


def test_the_qk_groups_add_up_to_the_score(session):
    """The heatmap's cells (query-side groups x key-side groups) sum to the head's score, which the caption names."""
    heatmap, caption, pairs = E.graph_qk(session, PROMPT, 2, 1, -1, 3)
    trace = heatmap.to_plotly_json()["data"][0]
    cells = np.asarray(trace["z"], dtype=float)
    score = float(caption.split("the cells add up to the score ")[1].split(" ")[0])
    assert abs(cells.sum() - score) < 0.01 + 1e-3 * abs(score)
    rows = [label.split(" (Σ")[0] for label in trace["y"]]
    assert rows[:2] == ["token", "position"] and rows[-1] == "bias" and "L0 attention" in rows
    assert {"features", "errors"} <= set(rows) and len(pairs) == E.QK_PARTS
    assert [abs(p[2]) for p in pairs] == sorted((abs(p[2]) for p in pairs), reverse=True)


def test_an_edge_within_one_position_goes_through_no_head(session, drawn):
    graph, kept = drawn[3], drawn[4]
    within = next(f"{node_key(graph, s)}>{node_key(graph, t)}" for t, s in kept.edge_mask.nonzero().tolist()
                  if graph.place(s)[1] == graph.place(t)[1])
    with pytest.raises(E.NoHead, match="goes through no head"):
        E.edge_head(session, PROMPT, within)


def test_a_model_without_transcoders_says_so_in_the_tabs_caption():
    chart, scores, caption = G.graph_tab_view(new_session("first-names"), "Ann", 0.8)
    assert chart == scores == "" and "has no transcoders" in caption


def test_the_json_export_is_circuit_tracers(session, drawn):
    content = json.loads(open(G.graph_json(session, PROMPT, 0.8), encoding="utf-8").read())
    assert {"metadata", "qParams", "nodes", "links"} <= content.keys()
    assert len(content["links"]) == int(drawn[4].edge_mask.sum())


@pytest.mark.parametrize("call, message", [
    (lambda s: G.attribution_graph_view(s, "", 0.8), "Type a prompt"),
    (lambda s: G.attribution_graph_view(s, None, 0.8), "Type a prompt"),
    (lambda s: G.attribution_graph_view(s, 12345, 0.8), "must be text"),
    (lambda s: G.attribution_graph_view(s, "ROMEO Ω", 0.8), "never saw"),
    (lambda s: G.attribution_graph_view(s, "To be or not to be " * 5, 0.8), "at most 63"),
    (lambda s: G.attribution_graph_view(s, PROMPT, 7), "Node threshold"),
    (lambda s: G.graph_node_view(s, PROMPT, "F:9:9:9"), "no node of this prompt's graph"),
    (lambda s: E.graph_intervene(s, PROMPT, "T:1", "set to", 0), "features only"),
    (lambda s: E.graph_qk(s, PROMPT, 0, 0, 2, 5), "must not come after"),
    (lambda s: E.group_nodes(None, [], "x"), "Tick the pinned nodes"),
    (lambda s: E.edge_head(s, PROMPT, "T:3>F:9:3:1"), "no node"),
])
def test_bad_input_gets_a_sentence(session, call, message):
    with pytest.raises(UserError, match=message):
        call(session)


BAD_NUMBERS = {"nan": math.nan, "inf": math.inf, "negative": -1, "1e30": 1e30, "2**70": 2**70, "text": "abc",
               "list": [1], "none": None, "bool": True}
NUMBERS = {"node_threshold": lambda s, v: G.attribution_graph_view(s, PROMPT, v),
           **{name: (lambda i: lambda s, v: E.graph_qk(s, PROMPT, *[v if j == i else d for j, d in
                                                                     enumerate((1, 0, -1, 2))]))(i)
              for i, name in enumerate(("layer", "head", "query", "key"))}}


@pytest.mark.parametrize("value", BAD_NUMBERS.values(), ids=BAD_NUMBERS.keys())
@pytest.mark.parametrize("name", NUMBERS)
def test_a_bad_number_is_refused_in_a_sentence_or_answered(session, drawn, name, value):
    try:
        NUMBERS[name](session, value)
    except UserError as err:
        assert str(err).strip() and "Error" not in str(err) and len(str(err)) < 400


def test_a_model_without_transcoders_is_refused_in_a_sentence():
    with pytest.raises(UserError, match="has no transcoders"):
        G.attribution_graph_view(new_session("first-names"), "Ann", 0.8)


def test_the_transcoder_settings_follow_the_model():
    """Opening "Train transcoders on this model" sets 8 x d_model features (64 wide: 512) and tokens that fit."""
    from explorer.callbacks.graph_training import DEFAULT_TOKENS, transcoders_training_setup
    names = new_session("first-names")
    shown = transcoders_training_setup(names)
    assert shown["features"] == 8 * names.inspected.config.d_model and 0 < shown["tokens"] <= DEFAULT_TOKENS
