"""Influence, pruning and the two scores of an attribution graph, defined as circuit-tracer defines them.

A node's influence is how much of the logits' probability-weighted input flows through it, counting every path:
rows of |A| are normalised to sum to 1 (each target's inputs as shares), and influence = w (Â + Â² + ...), with w the
logit nodes' probabilities. Pruning keeps the nodes holding node_threshold of the total influence (tokens and logits
always), then the edges holding edge_threshold of the edge influence (an edge's share times its target's influence
plus weight), then drops, until nothing changes, feature and error nodes left without an outgoing edge and features
without an incoming one.

Replacement score: of the influence that reaches the logits from tokens and errors, the share from tokens (1: every
path from the prompt to the prediction runs through features). Completeness score: the influence-weighted share of
every node's inputs that does not come from error nodes."""
from typing import NamedTuple

import torch

from model_core.analysis.attribution_graph import AttributionGraph

MAX_PATH = 1000  # path lengths followed before influence is declared divergent (a graph's depth is its layers + 2)


class Pruned(NamedTuple):
    node_mask: torch.Tensor  # [N] bool: nodes kept
    edge_mask: torch.Tensor  # [N, N] bool: edges kept (rows targets, columns sources)
    cumulative_scores: torch.Tensor  # [N] share of the total influence held by the nodes at least as influential


def shares(adjacency: torch.Tensor) -> torch.Tensor:
    """[N, N] |A| with each row summing to 1 (rows with no input stay 0)."""
    magnitude = adjacency.abs()
    return magnitude / magnitude.sum(1, keepdim=True).clamp_min(1e-10)


def logit_weights(graph: AttributionGraph) -> torch.Tensor:
    """[N]: each logit node's probability, 0 elsewhere."""
    weights = torch.zeros(graph.n_nodes)
    weights[graph.logit_start:] = graph.logit_probabilities
    return weights


def influence(share: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """weights (Â + Â² + ...) [N]: the graph is acyclic, so the series ends after its depth."""
    step = weights @ share
    total = step.clone()
    for _ in range(MAX_PATH):
        if not step.any():
            return total
        step = step @ share
        total += step
    raise RuntimeError("influence did not converge: the graph has a cycle.")


def node_influence(graph: AttributionGraph) -> torch.Tensor:
    return influence(shares(graph.adjacency), logit_weights(graph))


def threshold_for(scores: torch.Tensor, keep: float) -> torch.Tensor:
    """The score above which the largest scores (>= 0) hold `keep` of their total; 0 when only all of them do.
    Only the non-zero scores are sorted (an edge matrix is mostly zeros)."""
    ordered = scores[scores > 0].sort(descending=True).values
    held = ordered.cumsum(0) / ordered.sum()
    index = int(torch.searchsorted(held, torch.tensor(keep)))
    return ordered[index] if index < len(ordered) else scores.new_zeros(())


def cumulative_scores(scores: torch.Tensor) -> torch.Tensor:
    """[N]: the share of the total held by this node and every more influential one."""
    ordered, order = scores.sort(descending=True)
    out = torch.zeros_like(scores)
    out[order] = ordered.cumsum(0) / ordered.sum()
    return out


def prune_graph(graph: AttributionGraph, node_threshold: float = 0.8, edge_threshold: float = 0.98) -> Pruned:
    for name, value in (("node_threshold", node_threshold), ("edge_threshold", edge_threshold)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be between 0 and 1, got {value}.")
    n_kept_always = graph.n_pos + len(graph.logit_tokens)  # tokens and logits, the last nodes
    weights = logit_weights(graph)
    scores = influence(shares(graph.adjacency), weights)
    nodes = scores >= threshold_for(scores, node_threshold)
    nodes[-n_kept_always:] = True
    kept = graph.adjacency.clone()
    kept[~nodes] = 0
    kept[:, ~nodes] = 0
    kept_share = shares(kept)
    edge_scores = kept_share * (influence(kept_share, weights) + weights)[:, None]
    edges = edge_scores >= threshold_for(edge_scores.flatten(), edge_threshold)
    inner, n = slice(0, graph.n_nodes - n_kept_always), graph.n_features
    while True:
        before = nodes.clone()
        nodes[inner] &= edges[:, inner].any(0)  # features and errors need an outgoing edge
        nodes[:n] &= edges[:n].any(1)  # features need an incoming one
        edges[~nodes] = False
        edges[:, ~nodes] = False
        if torch.equal(nodes, before):
            return Pruned(nodes, edges, cumulative_scores(scores))


def graph_scores(graph: AttributionGraph) -> tuple[float, float]:
    """(replacement score, completeness score); see the module docstring."""
    weights = logit_weights(graph)
    share = shares(graph.adjacency)
    scores = influence(share, weights)
    errors = slice(graph.error_start, graph.token_start)
    from_tokens = scores[graph.token_start:graph.logit_start].sum()
    from_errors = scores[errors].sum()
    replacement = from_tokens / (from_tokens + from_errors)
    reach = scores + weights
    completeness = ((1 - share[:, errors].sum(1)) * reach).sum() / reach.sum()
    return float(replacement), float(completeness)
