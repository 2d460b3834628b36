"""The lesson checker's quantities about the Graph tab (lesson_claims.QUANTITIES): measured on the graph the tab
draws for the step's prompt, pruned at the step's node threshold. explorer.lesson_check adds them to its MEASURES."""
import numpy as np

from explorer.callbacks.graph_source import graph_tokens, pruned, traced
from explorer.common.errors import UserError


def traced_graph(view):
    return traced(view.session, graph_tokens(view.session, view.prompt, view.values.get("drop_unknown", False)))


def kept(view):
    return pruned(traced_graph(view), float(view.values.get("node_threshold", 0.8)))


def top_logit(view) -> tuple[str, float]:
    graph = traced_graph(view).graph
    return view.session.inspected.tokenizer.token_label(int(graph.logit_tokens[0])), float(graph.logit_probabilities[0])


def strongest_feature(view) -> str:
    """'L1 F670 at 7', as the caption names the most influential feature of the pruned graph."""
    found, nodes = traced_graph(view), kept(view).node_mask
    features = [i for i in np.flatnonzero(nodes) if found.graph.kind(int(i)) == "feature"]
    if not features:
        raise UserError("the pruned graph keeps no feature")
    layer, pos, feature = found.graph.active_features[max(features, key=lambda i: found.influence[i])].tolist()
    return f"L{layer} F{feature} at {pos}"


def token_influence(view, position: str) -> float:
    found = traced_graph(view)
    tokens = found.influence[found.graph.token_start:found.graph.logit_start]
    if int(position) >= len(tokens):
        raise UserError(f"the graph's prompt has positions 0 to {len(tokens) - 1} (0 is the start token)")
    return float(tokens[int(position)] / max(tokens.sum(), 1e-12))


GRAPH_MEASURES = {
    "graph top token": lambda view: top_logit(view)[0],
    "graph top probability": lambda view: top_logit(view)[1],
    "replacement score": lambda view: traced_graph(view).scores[0],
    "completeness score": lambda view: traced_graph(view).scores[1],
    "graph nodes": lambda view: int(kept(view).node_mask.sum()),
    "strongest graph feature": strongest_feature,
    "token influence": token_influence,
}
