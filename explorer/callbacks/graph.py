"""Graph tab: a prompt's attribution graph (circuit-tracer's method on the model's transcoders), pruned and drawn by
layer and position; one node read in full (a feature's top contexts and logit effects, as the Features tab shows a
feature, and its strongest edges); the graph as circuit-tracer's JSON."""
import json
from pathlib import Path

import numpy as np

from explorer.callbacks import validation
from explorer.callbacks.features import logit_ranking, top_contexts
from explorer.callbacks.graph_nodes import drawing, node_index, node_key, node_name
from explorer.callbacks.graph_source import current_transcoders, graph_tokens, pruned, traced
from explorer.callbacks.prompting import token_labels
from explorer.common.errors import UserError
from explorer.common.tempfiles import new_temp_dir
from explorer.figures import export
from explorer.figures.common import figure_to_json, note_figure
from explorer.figures.features import examples_html, logit_effects_figure
from explorer.figures.graph import graph_figure
from explorer.state.inspected import SAEChoice
from explorer.state.session import Session
from explorer.teaching.captions_graph import graph_caption, node_caption, scores_line
from model_core.analysis.graph_json import circuit_tracer_json, node_record

EDGES_LISTED = 8  # strongest incoming and outgoing edges listed for a node
EDGE_HEADERS = ["direction", "node", "key", "weight"]  # the API's rows (the key opens the node: /graph_node)
SHOWN_EDGE_HEADERS = ["direction", "node", "weight"]  # the tab's table (the keys kept aside, by node name)


def threshold(value) -> float:
    return validation.number(value, "Node threshold", minimum=0.05, maximum=1.0, default=0.8)


def _opened(session: Session, prompt: str, drop_unknown: bool):
    """(the prompt's graph, its token labels); a model without transcoders is refused before the prompt is read."""
    current_transcoders(session)
    ids = graph_tokens(session, prompt, drop_unknown)
    found = traced(session, ids)
    return found, token_labels(session.inspected.tokenizer, ids)


def transcoders_missing(session: Session) -> str:
    """'' when the inspected model has transcoders, else the sentence that says how to get some."""
    try:
        current_transcoders(session)
    except UserError as err:
        return str(err)
    return ""


def graph_tab_view(session: Session, prompt: str, node_threshold=0.8, drop_unknown: bool = False):
    """attribution_graph_view for the page: a model without transcoders gets its sentence in the caption and an
    empty chart, no refusal (a refusal's error badges stayed on the outputs until the next graph)."""
    missing = transcoders_missing(session)
    if missing:
        return "", "", missing
    return attribution_graph_view(session, prompt, node_threshold, drop_unknown)


def attribution_graph_view(session: Session, prompt: str, node_threshold=0.8, drop_unknown: bool = False):
    """-> (the pruned graph's figure as JSON for the live chart, the scores line, caption markdown)."""
    found, labels = _opened(session, prompt, drop_unknown)
    t, graph = threshold(node_threshold), found.graph
    kept = pruned(found, t)
    stats = current_transcoders(session).stats
    d = drawing(session, graph, kept, found.influence, labels, stats)
    vocab_label = session.inspected.tokenizer.token_label
    features = [i for i in np.flatnonzero(kept.node_mask) if graph.kind(int(i)) == "feature"]
    strongest = max(features, key=lambda i: found.influence[i], default=None)
    title = f"Attribution graph of the next token after “…{''.join(labels[-12:])}”"
    return (figure_to_json(graph_figure(d, title)),
            scores_line(*found.scores, int(kept.node_mask.sum()), graph.n_nodes, len(kept.targets), t),
            graph_caption("".join(labels[-12:]), vocab_label(int(graph.logit_tokens[0])),
                          float(graph.logit_probabilities[0]), "" if strongest is None else
                          node_name(graph, int(strongest), labels, vocab_label), len(features)))


def edge_rows(graph, i: int, labels: list[str], vocab_label) -> list[list]:
    """The node's strongest incoming then outgoing edges: [direction, node, key, weight]."""
    rows = []
    for direction, weights in (("from", graph.adjacency[i]), ("to", graph.adjacency[:, i])):
        order = weights.abs().argsort(descending=True)[:EDGES_LISTED]
        rows += [[direction, node_name(graph, int(j), labels, vocab_label), node_key(graph, int(j)),
                  round(float(weights[j]), 4)] for j in order.tolist() if weights[j] != 0]
    return rows


def graph_node_shown(session: Session, prompt: str, node: str = "", drop_unknown: bool = False):
    """The tab's node panel: (the node's name, caption, contexts, logit effects, edge rows [direction, node, weight],
    {node name: key} of the rows' nodes, for a click on a row)."""
    caption, contexts, logits, rows = graph_node_view(session, prompt, node, drop_unknown)
    found, labels = _opened(session, prompt, drop_unknown)
    name = node_name(found.graph, node_index(found.graph, node), labels, session.inspected.tokenizer.token_label)
    return (name, caption, contexts, logits, {"headers": SHOWN_EDGE_HEADERS, "data": [[d, n, w] for d, n, _, w in rows]},
            {n: k for _, n, k, _ in rows})


def graph_node_view(session: Session, prompt: str, node: str = "", drop_unknown: bool = False):
    """-> (caption markdown, top contexts HTML, logit effects figure, edge rows) of the node with key `node`
    (F:layer:position:feature, E:layer:position, T:position or L:token id)."""
    found, labels = _opened(session, prompt, drop_unknown)
    graph, vocab_label = found.graph, session.inspected.tokenizer.token_label
    i = node_index(graph, node)
    kind, name = graph.kind(i), node_name(graph, i, labels, vocab_label)
    rows = edge_rows(graph, i, labels, vocab_label)
    n_in, n_out = int((graph.adjacency[i] != 0).sum()), int((graph.adjacency[:, i] != 0).sum())
    if kind != "feature":
        detail = (f" (probability {float(graph.logit_probabilities[i - graph.logit_start]):.1%})"
                  if kind == "logit" else "")
        return (node_caption(name, kind, detail, n_in, n_out), "<p>Only features have top contexts.</p>",
                note_figure("Only features write a direction of their own.", "Tokens it promotes and suppresses"),
                rows)
    layer, _, feature = graph.active_features[i].tolist()
    tcs = current_transcoders(session)
    stats = tcs.stats[layer]
    choice = SAEChoice(tcs.transcoders[layer], stats, "transcoder")
    effects, up, down = logit_ranking(session, choice, feature)
    contexts = ("<p>No statistics ship for this layer.</p>" if stats is None else
                examples_html(top_contexts(session, stats, feature), stats.top_values[feature][
                    stats.top_values[feature] > 0], feature))
    detail = f" of layer {layer}, active at {float(graph.activations[i]):.3f} here"
    if stats is not None:
        detail += f" (it fires on {stats.density[feature]:.2%} of the validation tokens)"
    return (node_caption(name, kind, detail, n_in, n_out), contexts,
            logit_effects_figure([vocab_label(int(t)) for t in up], effects[up], [vocab_label(int(t)) for t in down],
                                 effects[down], feature), rows)


def graph_json(session: Session, prompt: str, node_threshold=0.8, drop_unknown: bool = False) -> str:
    """The pruned graph as circuit-tracer's graph JSON -> file path (the API's endpoint)."""
    return graph_json_file(session, prompt, node_threshold, None, drop_unknown)


def graph_json_file(session: Session, prompt: str, node_threshold=0.8, pins=None, drop_unknown: bool = False) -> str:
    """The pruned graph as circuit-tracer's graph JSON (pinned nodes and supernodes in its qParams) -> file path."""
    found, labels = _opened(session, prompt, drop_unknown)
    t, graph = threshold(node_threshold), found.graph
    kept = pruned(found, t).as_pruned()
    decode = session.inspected.tokenizer.decode
    pinned, groups = _pinned_ids(graph, pins)
    name = export.export_name("graph", "json", session.inspected.name, prompt)
    content = circuit_tracer_json(graph, kept, lambda token: decode([token]), name, f"transformer-explorer/"
                                  f"{session.inspected.name}", t, pinned, groups)
    path = Path(new_temp_dir()) / f"{name}.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    return str(path)


def _pinned_ids(graph, pins) -> tuple[list, list]:
    """circuit-tracer's node ids of the pinned nodes and [name, ids...] of each supernode (pins: the tab's state)."""
    def ids(keys):
        return [node_record(graph, node_index(graph, k), 0.0, str)["node_id"] for k in keys]
    pins = pins if isinstance(pins, dict) else {}
    return ids(pins.get("pinned", [])), [[name, *ids(keys)] for name, keys in pins.get("groups", {}).items()]
