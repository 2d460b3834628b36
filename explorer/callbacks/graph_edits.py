"""Graph tab, working with the graph: nodes pinned into a subgraph and grouped into named supernodes (the tab's
state: {"ids": the prompt's token ids, "pinned": [node keys], "groups": {name: [node keys]}}), an intervention on
pinned features (set or scale their activation: the top logits as the graph predicts and as the real model gives),
and why a head attends where it does (its score split into query-side x key-side parts)."""
import numpy as np
import torch

from explorer.callbacks import validation
from explorer.callbacks.graph import _opened
from explorer.callbacks.graph_nodes import node_index, node_key, node_name, shown_name
from explorer.callbacks.graph_source import current_transcoders, graph_tokens
from explorer.common.errors import UserError
from explorer.figures.common import compact, note_figure
from explorer.figures.graph import GraphDrawing, graph_figure, qk_pairs_figure, top_logits_figure
from explorer.state.session import Session
from explorer.teaching.captions_graph import intervention_caption, qk_caption, subgraph_caption
from model_core.analysis.graph_interventions import intervene
from model_core.analysis.qk_attribution import qk_attribution
from model_core.analysis.replacement import cached_pass

MODES = ("set to", "multiply by")
MAX_VALUE = 1000.0
SHOWN_TOKENS = 8  # tokens in the intervention's bars
SUBGRAPH_ROW_PX = 80
QK_PARTS = 10  # query-side and key-side parts shown


def pins_for(pins, ids: list[int]) -> dict:
    """The state for this prompt: a state made on another prompt (or none yet) starts empty."""
    if isinstance(pins, dict) and pins.get("ids") == list(ids):
        return {"ids": list(ids), "pinned": list(pins.get("pinned", [])), "groups": dict(pins.get("groups", {}))}
    return {"ids": list(ids), "pinned": [], "groups": {}}


def pin_node(session: Session, prompt: str, node: str, pins=None, drop_unknown: bool = False) -> dict:
    """-> the state with the node pinned (checked against the prompt's graph)."""
    found, _ = _opened(session, prompt, drop_unknown)
    graph = found.graph
    state = pins_for(pins, graph.tokens.tolist())
    node = str(node or "").strip()
    if not node:
        raise UserError("Click a node in the chart first, then pin it.")
    i = node_index(graph, node)
    first = not state["pinned"] and not state["groups"]
    if node not in state["pinned"] and not any(node in keys for keys in state["groups"].values()):
        state["pinned"].append(node)
    top_logit = node_key(graph, graph.logit_start)  # the first pin brings the top logit, so the subgraph has an edge
    if first and graph.kind(i) != "logit" and top_logit != node:
        state["pinned"].append(top_logit)
    return state


def group_nodes(pins, selected, name: str) -> dict:
    """-> the state with the selected pinned nodes (keys) grouped as the supernode `name`."""
    state = pins if isinstance(pins, dict) else {"ids": [], "pinned": [], "groups": {}}
    name = (name or "").strip()[:40]
    chosen = [k for k in (selected or []) if k in state["pinned"]]
    if not name:
        raise UserError("Name the supernode first (what its features have in common, e.g. “says a vowel”).")
    if not chosen:
        raise UserError("Tick the pinned nodes to group first: pin nodes by clicking them, then “Pin this node”.")
    if name in state["groups"]:
        raise UserError(f"There is a supernode named “{name}” already: pick another name.")
    state = {**state, "pinned": [k for k in state["pinned"] if k not in chosen],
             "groups": {**state["groups"], name: chosen}}
    return state


def _members(state: dict) -> list[tuple[str, list[str]]]:
    """[(name or None for a lone pin, node keys)] of the subgraph's nodes."""
    return [(None, [k]) for k in state["pinned"]] + list(state["groups"].items())


def pinned_view(session: Session, prompt: str, pins=None, drop_unknown: bool = False):
    """-> ([(label, key)] of the loose pinned nodes, [(label, keys)] of what an intervention can edit, the subgraph
    (the pinned nodes and supernodes with every edge between them: a supernode's are its members' sums), caption)."""
    if not isinstance(pins, dict) or not (pins.get("pinned") or pins.get("groups")):  # nothing pinned (or unpinned)
        return [], [], note_figure("Pin nodes (click one, then “Pin this node”) to draw them here.", "Subgraph"), ""
    state = pins_for(pins, graph_tokens(session, prompt, drop_unknown))
    members = _members(state)
    if not members:
        return [], [], note_figure("Pin nodes (click one, then “Pin this node”) to draw them here.", "Subgraph"), ""
    found, labels = _opened(session, prompt, drop_unknown)
    graph, vocab_label = found.graph, session.inspected.tokenizer.token_label
    loose = [(node_name(graph, node_index(graph, k), labels, vocab_label), k) for k in state["pinned"]]
    editable = [(label, key) for label, key in loose if key.startswith("F:")]
    for name, keys in state["groups"].items():
        features = [k for k in keys if k.startswith("F:")]
        if features:
            editable.append((f"{name} (supernode, {len(features)} features)", ",".join(features)))
    d = _collapsed(session, graph, [(name, [node_index(graph, k) for k in keys]) for name, keys in members], labels,
                   found.influence)
    strongest = int(np.argmax(np.abs(d.weights))) if len(d.weights) else None
    edge = None if strongest is None else (d.titles[d.sources[strongest]], d.titles[d.targets[strongest]],
                                           float(d.weights[strongest]))
    return (loose, editable, graph_figure(d, "Subgraph of the pinned nodes (a supernode is one node)",
                                          row_px=SUBGRAPH_ROW_PX),
            subgraph_caption(len(state["pinned"]), len(state["groups"]), edge))


def _collapsed(session, graph, members: list, labels: list[str], influence) -> GraphDrawing:
    """A drawing of the members (each a node or a supernode summing its nodes' edges)."""
    A, vocab_label = graph.adjacency, session.inspected.tokenizer.token_label
    weights = np.array([[float(A[np.ix_(t, s)].sum()) if a != b else 0.0 for b, (_, s) in enumerate(members)]
                        for a, (_, t) in enumerate(members)])  # [targets, sources]
    targets, sources = np.nonzero(np.abs(weights) > 1e-6)
    places = [[graph.place(i) for i in idx] for _, idx in members]
    first = [idx[0] for _, idx in members]
    size = np.array([float(influence[idx].sum()) for _, idx in members])
    size = size / max(size.max(initial=0), 1e-12)
    names = [name or shown_name(graph, i, labels, vocab_label, True) for (name, _), i in zip(members, first)]
    return GraphDrawing(
        columns=labels, n_layers=graph.n_layers, kinds=[graph.kind(i) for i in first],
        layers=np.array([max(p[0] for p in pl) for pl in places]),
        positions=np.array([max(p[1] for p in pl) for pl in places]), influence=size,
        hovers=[f"<b>{name}</b><br>" + "<br>".join(node_name(graph, i, labels, vocab_label) for i in idx)
                for name, (_, idx) in zip(names, members)],
        keys=[",".join(map(str, idx)) for _, idx in members], titles=[nm.replace("<br>", " ") for nm in names],
        sources=sources, targets=targets, weights=compact(weights[targets, sources]), names=names,
        every_column=False, clickable=False)


def _edits(graph, features: str, mode: str, value) -> tuple[list[tuple[int, int, int, float]], list[int], str, float]:
    """-> (the edits (layer, position, feature, new activation), the edited nodes, the mode, the value)."""
    mode = validation.choice(mode or MODES[0], "Intervention", MODES)
    x = validation.number(value, "Value", minimum=-MAX_VALUE, maximum=MAX_VALUE, default=0.0)
    keys = [k.strip() for k in str(features or "").split(",") if k.strip()]
    if not keys or not all(k.startswith("F:") for k in keys):
        raise UserError("Choose a pinned feature or supernode to intervene on (features only: tokens and errors "
                        "have no activation to set).")
    nodes = [node_index(graph, key) for key in keys]
    edits = [(*graph.active_features[i, :3].tolist(), x if mode == MODES[0] else x * float(graph.activations[i]))
             for i in nodes]
    return edits, nodes, mode, x


def graph_intervene(session: Session, prompt: str, features: str = "", mode: str = MODES[0], value=0.0,
                    drop_unknown: bool = False):
    """features: node keys (F:layer:position:feature, comma-separated); mode 'set to' or 'multiply by' value ->
    (bars of the top tokens' probabilities before, as the graph predicts and in the real model; caption)."""
    found, labels = _opened(session, prompt, drop_unknown)
    graph, vocab_label = found.graph, session.inspected.tokenizer.token_label
    edits, nodes, mode, x = _edits(graph, features, mode, value)
    result = intervene(session.inspected.model, current_transcoders(session).transcoders, graph.tokens, edits)
    probs = [torch.softmax(t.float(), -1).numpy() for t in (result.original, result.predicted, result.real)]
    shown = list(dict.fromkeys(int(t) for p in probs for t in np.argsort(-p)[:4]))[:SHOWN_TOKENS]
    shown.sort(key=lambda t: -probs[0][t])
    tokens = [vocab_label(t) for t in shown]
    names = [node_name(graph, i, labels, vocab_label) for i in nodes]
    target = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    change = f"Setting {target} to {x:g}" if mode == MODES[0] else f"Multiplying {target} by {x:g}"
    series = [(name, p[shown]) for name, p in zip(("before", "as the graph predicts", "real model"), probs)]
    top = shown[0]
    return (top_logits_figure(tokens, series, f"Top next tokens after {change[0].lower()}{change[1:]}"),
            intervention_caption(change, tokens[0], probs[0][top], probs[1][top], probs[2][top]))


def _position(value, name: str, n: int) -> int:
    p = validation.whole_number(value, name, minimum=-n, maximum=n - 1, default=-1)
    return p % n


def part_group(label: str) -> str:
    """A QK part's group: its token, its position, each earlier layer's attention, features, errors, the FFNs' biases
    and skips, the norm's and projection's bias."""
    if label.startswith("token "):
        return "token"
    if label.endswith(" feature") or " feature " in label:
        return "features"
    if label.endswith(" error"):
        return "errors"
    if label.endswith("FFN bias and skip"):
        return "FFN biases and skips"
    return label  # "position", "L0 attention", "bias"


def grouped(labels: list[str], matrix: np.ndarray, axis: int) -> tuple[list[str], np.ndarray]:
    """(group names in the parts' order, matrix summed over each group's parts along axis)."""
    names = list(dict.fromkeys(part_group(label) for label in labels))
    names = [n for n in names if n != "bias"] + (["bias"] if "bias" in names else [])
    which = np.array([names.index(part_group(label)) for label in labels])
    sums = [matrix.take(np.flatnonzero(which == g), axis=axis).sum(axis) for g in range(len(names))]
    return names, np.stack(sums, axis)


def graph_qk(session: Session, prompt: str, layer=0, head=0, query_position=-1, key_position=0,
             drop_unknown: bool = False):
    """The score of head `head` in `layer` from position query to key of the graph's tokens (the start token is
    position 0) split into query-side x key-side parts -> (heatmap of the parts grouped (token, position, each earlier
    layer's attention, features, errors, biases; its cells add up to the score), caption, rows [query side, key side,
    part] of the QK_PARTS largest single pairs)."""
    transcoders = current_transcoders(session).transcoders
    ids = graph_tokens(session, prompt, drop_unknown)
    cfg, tok = session.inspected.config, session.inspected.tokenizer
    layer = validation.whole_number(layer, "Layer", minimum=0, maximum=cfg.n_layers - 1, default=0)
    head = validation.whole_number(head, "Head", minimum=0, maximum=cfg.n_heads - 1, default=0)
    q, k = _position(query_position, "Query position", len(ids)), _position(key_position, "Key position", len(ids))
    if k > q:
        raise UserError(f"The key position ({k}) must not come after the query ({q}): a head only looks back.")
    qk = qk_attribution(session.inspected.model, transcoders, ids, layer, head, q, k,
                        decode=tok.token_label)
    m = qk.matrix.numpy().astype(np.float64)
    rows, by_rows = grouped(qk.query_parts, m, 0)
    cols, cells = grouped(qk.key_parts, by_rows, 1)  # [query groups, key groups]
    labels = [tok.token_label(i) for i in ids]
    where = f"{q}:{labels[q]}", f"{k}:{labels[k]}"
    big = np.unravel_index(int(np.argmax(np.abs(cells))), cells.shape)
    pairs = qk.top_pairs(QK_PARTS)
    figure = qk_pairs_figure([f"{r} (Σ {v:+.2f})" for r, v in zip(rows, cells.sum(1))],
                             [f"{c} (Σ {v:+.2f})" for c, v in zip(cols, cells.sum(0))], cells,
                             f"L{layer}·H{head}: why {where[0]} attends to {where[1]} (score {qk.score:+.2f})")
    return (figure, qk_caption(layer, head, *where, qk.score, (rows[big[0]], cols[big[1]], float(cells[big])),
                               pairs[0]),
            [[a, b, round(v, 4)] for a, b, v in pairs])


class NoHead(UserError):
    """An edge no attention head carries (it stays at one position)."""


def edge_head(session: Session, prompt: str, edge: str, drop_unknown: bool = False) -> tuple[int, int, int, int]:
    """'source key>target key' -> (layer, head, query, key): the head that, among the layers that can carry the edge
    (after the source writes, up to the target's), attends most from the target's position to the source's; NoHead
    for an edge within one position."""
    found, _ = _opened(session, prompt, drop_unknown)
    graph = found.graph
    source, target = (node_index(graph, k) for k in str(edge).split(">", 1))
    (s_layer, key), (t_layer, query) = graph.place(source), graph.place(target)
    if key == query:
        raise NoHead("This edge stays within one position, so it goes through no head (the residual stream carries "
                     "it): click an edge between two positions.")
    first = s_layer + 1 if graph.kind(source) in ("feature", "error") else 0
    last = min(t_layer, graph.n_layers - 1)
    if first > last:
        raise NoHead("This edge passes through no attention layer: its source writes where its target reads.")
    patterns = cached_pass(session.inspected.model, graph.tokens).patterns  # per layer [H, T, T]
    weights = torch.stack([patterns[layer][:, query, key] for layer in range(first, last + 1)])  # [layers, H]
    best = int(weights.flatten().argmax())
    return first + best // weights.shape[1], best % weights.shape[1], query, key


def edge_qk(session: Session, prompt: str, edge: str, drop_unknown: bool = False):
    """A clicked edge -> (layer, head, query, key, then graph_qk's heatmap, caption and rows for them), in one call so
    the split never runs on values from before the click."""
    layer, head, query, key = edge_head(session, prompt, edge, drop_unknown)
    return (layer, head, query, key, *graph_qk(session, prompt, layer, head, query, key, drop_unknown))


def group_pinned(session: Session, pins=None, selected=None, name: str = "") -> dict:
    """group_nodes for the tab (bound callbacks take the session first)."""
    return group_nodes(pins, selected, name)
