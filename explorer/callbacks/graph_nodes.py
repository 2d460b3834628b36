"""An attribution graph's nodes as the Graph tab names and draws them: a key per node that a click sends back
("F:layer:pos:feature", "E:layer:pos", "T:pos", "L:token id"), a name a student reads, hover text (a feature's top
tokens and contexts from its layer's statistics) and the pruned graph as a figure's arrays."""
import html

import numpy as np

from explorer.callbacks.features import top_contexts, top_place_tokens
from explorer.common.errors import UserError
from explorer.figures.graph import GraphDrawing
from explorer.state.session import Session

HOVER_CONTEXT = 24  # characters of a top context shown before its place
HOVER_CONTEXTS = 2  # top contexts in a feature's hover


def node_key(graph, i: int) -> str:
    kind = graph.kind(i)
    if kind == "feature":
        return "F:{}:{}:{}".format(*graph.active_features[i].tolist())
    if kind == "error":
        return "E:{}:{}".format(*graph.place(i))
    if kind == "token":
        return f"T:{i - graph.token_start}"
    return f"L:{int(graph.logit_tokens[i - graph.logit_start])}"


def node_index(graph, key) -> int:
    """The node a key names; UserError for a key of no node of this graph (a chart of another prompt)."""
    try:
        kind, *numbers = str(key).strip().split(":")
        numbers = [int(n) for n in numbers]
        if kind == "F":
            hits = (graph.active_features == graph.active_features.new_tensor(numbers)).all(1).nonzero()
            return int(hits[0, 0])
        if kind == "E":
            layer, pos = numbers
            assert 0 <= layer < graph.n_layers and 0 <= pos < graph.n_pos
            return graph.error_start + layer * graph.n_pos + pos
        if kind == "T":
            assert 0 <= numbers[0] < graph.n_pos
            return graph.token_start + numbers[0]
        if kind == "L":
            return graph.logit_start + int((graph.logit_tokens == numbers[0]).nonzero()[0, 0])
    except (ValueError, IndexError, AssertionError, RuntimeError, TypeError):
        pass
    raise UserError(f"{str(key)[:40]!r} is no node of this prompt's graph: click a node of the chart (or name one as "
                    "F:layer:position:feature, E:layer:position, T:position or L:token id).")


def node_name(graph, i: int, labels: list[str], vocab_label) -> str:
    """'L1 F23 at 5:e', 'error L1 at 5:e', 'token 5:e', 'logit e'."""
    kind, (layer, pos) = graph.kind(i), graph.place(i)
    if kind == "feature":
        return f"L{layer} F{int(graph.active_features[i, 2])} at {pos}:{labels[pos]}"
    if kind == "error":
        return f"error L{layer} at {pos}:{labels[pos]}"
    if kind == "token":
        return f"token {pos}:{labels[pos]}"
    return f"logit {vocab_label(int(graph.logit_tokens[i - graph.logit_start]))}"


def feature_lines(session: Session, stats, feature: int) -> list[str]:
    """Hover lines about a transcoder feature from its layer's statistics: its top tokens and top context."""
    if stats is None:
        return []
    tokens = top_place_tokens(session, stats, feature)
    if not tokens:
        return ["never fires on the validation text"]
    contexts = [f"…{_escape(''.join(labels[:at])[-HOVER_CONTEXT:])}<b>[{_escape(labels[at])}]</b>"
                for labels, at, _ in top_contexts(session, stats, feature)[:HOVER_CONTEXTS]]
    return [f"fires hardest on: {' '.join(dict.fromkeys(tokens[:6]))}", "top contexts:", *contexts,
            f"density {stats.density[feature]:.2%}"]


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def node_hover(session: Session, graph, i: int, labels: list[str], stats: list, influence: float) -> str:
    """A node's hover text: its name; a feature's activation and statistics, a logit's probability; its influence."""
    vocab_label = session.inspected.tokenizer.token_label
    lines = [f"<b>{_escape(node_name(graph, i, labels, vocab_label))}</b>"]
    kind = graph.kind(i)
    if kind == "feature":
        layer, _, feature = graph.active_features[i].tolist()
        lines += [f"activation {float(graph.activations[i]):.3f}", *feature_lines(session, stats[layer], feature)]
    elif kind == "error":
        lines.append("what the transcoder misses of the FFN's output here")
    elif kind == "logit":
        lines += [f"probability {float(graph.logit_probabilities[i - graph.logit_start]):.1%}",
                  f"as the next token after the last position ({len(labels) - 1}:{_escape(labels[-1])})"]
    if kind != "logit":
        lines.append(f"influence on the logits {influence:.3f}")
    return "<br>".join(lines + ["click to read it"])


def drawing(session: Session, graph, kept, influence: np.ndarray, labels: list[str], stats: list) -> GraphDrawing:
    """kept: the pruning (graph_source.Kept: node mask, edges as index pairs) -> the figure's arrays; influence [N];
    stats: each layer's FeatureStats (or None), for the hover."""
    nodes = np.flatnonzero(kept.node_mask)
    where = np.full(len(kept.node_mask), -1)
    where[nodes] = np.arange(len(nodes))
    targets, sources = where[kept.targets], where[kept.sources]  # kept edges join kept nodes
    adjacency = graph.adjacency.numpy()
    places = [graph.place(int(n)) for n in nodes]
    size = influence[nodes] / max(float(influence[nodes].max(initial=0)), 1e-12)
    logits = [j for j, n in enumerate(nodes) if graph.kind(int(n)) == "logit"]
    size[logits] = graph.logit_probabilities.numpy()[[int(nodes[j]) - graph.logit_start for j in logits]]
    vocab_label = session.inspected.tokenizer.token_label
    return GraphDrawing(
        columns=labels, n_layers=graph.n_layers, kinds=[graph.kind(int(n)) for n in nodes],
        layers=np.array([p[0] for p in places]), positions=np.array([p[1] for p in places]), influence=size,
        hovers=[node_hover(session, graph, int(n), labels, stats, float(influence[n])) for n in nodes],
        keys=[node_key(graph, int(n)) for n in nodes],
        titles=[_escape(node_name(graph, int(n), labels, vocab_label)) for n in nodes],
        sources=sources, targets=targets, weights=adjacency[nodes[targets], nodes[sources]],
        names=[shown_name(graph, int(n), labels, vocab_label, False) for n in nodes])


def shown_name(graph, i: int, labels: list[str], vocab_label, every_node: bool) -> str:
    """The text drawn beside a node: a logit's token and probability; every node's name when every_node."""
    if graph.kind(i) == "logit":
        j = i - graph.logit_start
        token = _escape(vocab_label(int(graph.logit_tokens[j])))
        return f"“{token}” {float(graph.logit_probabilities[j]):.0%}"  # quoted as the columns' labels are
    return _escape(node_name(graph, i, labels, vocab_label)).replace(" at ", "<br>") if every_node else ""
