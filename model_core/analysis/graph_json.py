"""An attribution graph as circuit-tracer's graph JSON (what its local viewer and Neuronpedia read): metadata,
qParams (pinned nodes, supernodes), nodes and links of the pruned graph.

Node ids as circuit-tracer writes them: a feature "{layer}_{feature}_{pos}", an error "0_{layer}_{pos}", a token
"E_{token id}_{pos}", a logit "{L+1}_{token id}_{last pos}"; `influence` is the node's cumulative influence score;
a link's weight is the edge's (target row, source column) entry. Only nodes on a kept edge are listed, and every
token and logit node."""
from typing import Callable, Sequence

from model_core.analysis.attribution_graph import AttributionGraph
from model_core.analysis.graph_pruning import Pruned


def cantor(x: int, y: int) -> int:
    """One integer for the pair (layer, feature), as circuit-tracer numbers features."""
    return (x + y) * (x + y + 1) // 2 + y


def node_record(graph: AttributionGraph, node: int, influence: float, decode: Callable[[int], str]) -> dict:
    """One node's JSON object."""
    kind, (layer, pos) = graph.kind(node), graph.place(node)
    common = {"ctx_idx": pos, "token_prob": 0.0, "is_target_logit": False, "run_idx": 0, "reverse_ctx_idx": 0,
              "clerp": "", "influence": influence, "activation": None}
    if kind == "feature":
        feature = int(graph.active_features[node, 2])
        return {**common, "node_id": f"{layer}_{feature}_{pos}", "feature": cantor(layer, feature), "layer": str(layer),
                "feature_type": "cross layer transcoder", "jsNodeId": f"{layer}_{feature}-0",
                "activation": float(graph.activations[node])}
    if kind == "error":
        return {**common, "node_id": f"0_{layer}_{pos}", "feature": -1, "layer": str(layer),
                "feature_type": "mlp reconstruction error", "jsNodeId": f"{layer}_{pos}-0"}
    if kind == "token":
        token = int(graph.tokens[pos])
        return {**common, "node_id": f"E_{token}_{pos}", "feature": pos, "layer": "E", "feature_type": "embedding",
                "jsNodeId": f"E_{token}-{pos}"}
    index = node - graph.logit_start
    token, prob = int(graph.logit_tokens[index]), float(graph.logit_probabilities[index])
    top = str(graph.n_layers + 1)
    return {**common, "node_id": f"{top}_{token}_{pos}", "feature": token, "layer": top, "feature_type": "logit",
            "token_prob": prob, "is_target_logit": index == 0, "jsNodeId": f"L_{token}-{pos}",
            "clerp": f'Output "{decode(token)}" (p={prob:.3f})'}


def circuit_tracer_json(graph: AttributionGraph, pruned: Pruned, decode: Callable[[int], str], slug: str,
                        scan: str, node_threshold: float, pinned: Sequence[str] = (),
                        supernodes: Sequence[Sequence[str]] = ()) -> dict:
    """The graph file's content; pinned node ids and supernodes ([name, node id, ...]) go to qParams."""
    scores = pruned.cumulative_scores.tolist()
    nodes = {node: node_record(graph, node, scores[node], decode) for node in pruned.node_mask.nonzero().flatten().tolist()}
    targets, sources = pruned.edge_mask.nonzero(as_tuple=True)
    links = [{"source": nodes[s]["node_id"], "target": nodes[t]["node_id"], "weight": float(graph.adjacency[t, s])}
             for t, s in zip(targets.tolist(), sources.tolist()) if s in nodes and t in nodes]
    linked = {link["source"] for link in links} | {link["target"] for link in links}
    used = [node for node in nodes.values() if node["node_id"] in linked or node["feature_type"] in ("embedding", "logit")]
    metadata = {"slug": slug, "scan": scan, "transcoder_list": [], "prompt_tokens": [decode(int(t)) for t in graph.tokens],
                "prompt": "".join(decode(int(t)) for t in graph.tokens), "node_threshold": node_threshold,
                "schema_version": 1}
    q_params = {"pinnedIds": list(pinned), "supernodes": [list(group) for group in supernodes], "linkType": "both",
                "clickedId": "", "sg_pos": ""}
    return {"metadata": metadata, "qParams": q_params, "nodes": used, "links": links}
