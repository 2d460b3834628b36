"""What the Graph tab reads: the inspected model's transcoders (shipped for an unmodified shipped model), the prompt
as the graph's tokens (a start token first, at most MAX_TOKENS), and the prompt's attribution graph and its pruning,
computed once and kept for every session inspecting the same shipped model."""
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

from explorer.callbacks.prompting import encode_prompt
from explorer.common.errors import UserError
from explorer.common.shipped_list import display_name
from explorer.state.session import Session, require_model
from explorer.state.shipped_transcoders import shipped_transcoder_names, shipped_transcoders
from model_core.analysis.attribution_graph import AttributionGraph, attribution_graph
from model_core.analysis.graph_pruning import Pruned, graph_scores, node_influence, prune_graph

MAX_TOKENS = 64  # tokens of a graph's prompt, the start token included
START = "\n"  # the start token the app puts first (circuit-tracer expects a BOS token at position 0)
KEPT_PRUNINGS = 2  # node thresholds kept per graph (each an [N, N] mask)
KEPT_GRAPHS = 3  # graphs kept in the process (each is [N, N] floats: 200 MB at the 7,000 nodes of 53 tokens)


@dataclass
class Transcoders:
    transcoders: list  # one model_core.features.transcoder.Transcoder per layer
    stats: list  # one FeatureStats (or None) per layer: top contexts, density, histogram
    key: str = ""  # a set trained here: its own key for the graphs computed on it


@dataclass
class Traced:
    """One prompt's graph and what the tab reads off it."""
    graph: AttributionGraph
    scores: tuple  # (replacement score, completeness score)
    influence: np.ndarray  # [N] each node's influence on the logits (circuit-tracer's; logits 0)
    pruned: dict  # node threshold -> Kept


@dataclass
class Kept:
    """One pruning of a graph, its edges as index pairs (a dense [N, N] mask is 64 MB at 8,000 nodes)."""
    node_mask: np.ndarray  # [N] bool
    targets: np.ndarray  # [m] int32 rows (targets) of the kept edges
    sources: np.ndarray  # [m] int32 their columns (sources)
    cumulative_scores: np.ndarray  # [N]

    def as_pruned(self) -> Pruned:
        """model_core's Pruned (torch tensors, a dense edge mask)."""
        edges = torch.zeros(len(self.node_mask), len(self.node_mask), dtype=torch.bool)
        edges[torch.from_numpy(self.targets).long(), torch.from_numpy(self.sources).long()] = True
        return Pruned(torch.from_numpy(self.node_mask), edges, torch.from_numpy(self.cumulative_scores))


def no_transcoders_sentence(session: Session) -> str:
    shipped = ", ".join(map(display_name, shipped_transcoder_names())) or "none"
    return (f"The inspected model ({display_name(session.inspected.name)}) has no transcoders, which an attribution "
            f"graph is made of: transcoders ship for {shipped} (pick it on the Train tab), or train a set for this "
            "model under **Train transcoders on this model** below.")


def current_transcoders(session: Session) -> Transcoders:
    """The transcoders the tab reads; UserError saying how to get some when there are none."""
    require_model(session)
    if session.inspected.caches.transcoders is not None:  # trained here, for this very model
        return session.inspected.caches.transcoders
    key = session.inspected.shared_key or ""
    found = shipped_transcoders(key.removeprefix("shipped:")) if key.startswith("shipped:") else None
    if found is None:
        raise UserError(no_transcoders_sentence(session))
    return Transcoders(*found)


def graph_tokens(session: Session, prompt: str, drop_unknown: bool = False) -> list[int]:
    """The prompt's ids with the start token first (unless it starts with one); UserError past MAX_TOKENS."""
    cap = min(MAX_TOKENS, session.inspected.config.block_size)
    if prompt is not None and not isinstance(prompt, str):
        raise UserError("The prompt must be text.")
    if not (prompt or "").strip(" \t\n"):
        raise UserError("Type a prompt first: the graph explains the model's next token after it.")
    text = prompt if prompt.startswith(START) else START + prompt
    ids = encode_prompt(session.inspected.tokenizer, text, 10**9, drop_unknown)
    if len(ids) > cap:
        raise UserError(f"The prompt is {len(ids) - 1} tokens long; an attribution graph reads at most {cap - 1} "
                        "(its size grows with the square of the prompt): shorten it.")
    return ids


class _Kept:
    """Graphs by (model key, ids), the newest KEPT_GRAPHS; one computation per key however many ask at once."""

    def __init__(self):
        self.items, self.lock, self.computing = OrderedDict(), threading.Lock(), {}

    def get(self, key, compute):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
            gate = self.computing.setdefault(key, threading.Lock())
        with gate:
            with self.lock:
                if key in self.items:
                    return self.items[key]
            value = compute()
            with self.lock:
                self.items[key] = value
                self.computing.pop(key, None)
                while len(self.items) > KEPT_GRAPHS:
                    self.items.popitem(last=False)
            return value


KEPT = _Kept()
PRUNING = threading.Lock()  # guards each graph's kept prunings


def traced(session: Session, ids: list[int]) -> Traced:
    """The attribution graph of ids on the inspected model (computed once per shipped model and prompt)."""
    tcs = current_transcoders(session)
    model = session.inspected.model

    def compute() -> Traced:
        graph = attribution_graph(model, tcs.transcoders, ids)
        return Traced(graph, graph_scores(graph), node_influence(graph).numpy(), {})
    owner = session.inspected.shared_key if session.inspected.caches.transcoders is None else tcs.key
    return KEPT.get((owner, tuple(ids)), compute)


def pruned(found: Traced, node_threshold: float) -> Kept:
    """The graph pruned to the nodes holding node_threshold of the influence (prune_graph's masks)."""
    key = round(float(node_threshold), 4)
    kept = found.pruned.get(key)
    if kept is None:  # sessions share the graph: two may prune it at once, and keep the same answer
        nodes, edges, scores = prune_graph(found.graph, node_threshold=key)
        targets, sources = (t.numpy().astype(np.int32) for t in edges.nonzero(as_tuple=True))
        kept = Kept(nodes.numpy(), targets, sources, scores.numpy())
        with PRUNING:
            found.pruned[key] = kept
            while len(found.pruned) > KEPT_PRUNINGS:
                found.pruned.pop(next(iter(found.pruned)))
    return kept
