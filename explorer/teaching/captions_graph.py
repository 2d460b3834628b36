"""Captions of the Graph tab, computed from the data (a pruned attribution graph, one node, an intervention, a QK
attribution)."""


def scores_line(replacement: float, completeness: float, nodes: int, all_nodes: int, edges: int,
                threshold: float) -> str:
    """The graph's two scores and its size, each with what it means in one clause."""
    return (f"**Replacement score {replacement:.2f}** (of the influence reaching the logits from the prompt, the share "
            f"that flows through features rather than error nodes) · **completeness {completeness:.2f}** (the share of "
            f"the nodes' inputs that does not come from error nodes) · **{nodes:,} of {all_nodes:,} nodes and "
            f"{edges:,} edges** kept (the nodes holding {threshold:.0%} of the influence).")


def graph_caption(prompt_end: str, top_token: str, top_probability: float, strongest: str, n_features: int) -> str:
    """'After "…hear me" the model expects "␣" (43%). Its strongest feature: L3 F12 at 53:e. Blue edges raise ...'"""
    lead = f"After “…{prompt_end}” the model's top next token is “{top_token}” ({top_probability:.0%}). "
    if n_features == 0:
        lead += ("No feature holds enough influence at this node threshold to stay in the pruned graph: raise the "
                 "threshold to see the features behind it.")
    else:
        lead += (f"{n_features} feature{'s' * (n_features != 1)} explain{'s' * (n_features == 1)} it in the pruned "
                 "graph")
        lead += f"; the most influential is **{strongest}**." if strongest else "."
    return (f"{lead} Rows are layers (token embeddings at the bottom, logits on top), columns the prompt's tokens. "
            "A blue edge raises its target, a red one lowers it; thicker is stronger. Hover a node for what it "
            "reads, click it to open it below.")


def node_caption(name: str, kind: str, detail: str, n_in: int, n_out: int) -> str:
    """What the clicked node is and how it is wired."""
    what = {"feature": "a transcoder feature", "error": "an error node: what the transcoder at this layer misses "
            "of the FFN's output", "token": "a token's embedding", "logit": "a next-token logit"}[kind]
    return (f"**{name}** is {what}{detail}. It has {n_in} incoming and {n_out} outgoing edges in the full graph; the "
            "table lists the strongest of each.")


PIN_TWO = ("pin at least two connected nodes (for example a feature and the logit it feeds) to see the edges "
           "between them.")


def subgraph_caption(n_pinned: int, n_groups: int, strongest: tuple | None) -> str:
    """'3 pinned nodes and 1 supernode; the strongest edge between them: A → B (+1.20).'"""
    size = f"{n_pinned} pinned node{'s' * (n_pinned != 1)} and {n_groups} supernode{'s' * (n_groups != 1)}"
    if n_pinned + n_groups < 2:
        return f"{size}: {PIN_TWO[0].upper()}{PIN_TWO[1:]}"
    if strongest is None:
        return f"{size}; no edges run between them (pin nodes that the graph connects)."
    source, target, weight = strongest
    way = "raises" if weight > 0 else "lowers"
    return f"{size}; the strongest edge between them: {source} → {target} ({weight:+.2f}: it {way} its target)."


def intervention_caption(change: str, token: str, before: float, predicted: float, real: float) -> str:
    """'Setting L1 F5 at 7:e to 0: "␣" goes from 43% to 21% as the graph predicts, 25% in the real model.'"""
    agree = "close to" if abs(predicted - real) < 0.05 else "unlike"
    return (f"{change}: the top token “{token}” goes from {before:.0%} to {predicted:.0%} as the graph "
            f"predicts (attention and norms frozen) and to {real:.0%} in the real model ({agree} the prediction).")


def qk_caption(layer: int, head: int, query: str, key: str, score: float, top_group: tuple, top: tuple) -> str:
    """The head's score, the group pair that makes most of it and the single pair that does (each (query side, key
    side, value)); the cells add up to the score."""
    (gq, gk, gv), (q, k, value) = top_group, top
    return (f"Head L{layer}·H{head} scores {score:+.2f} from the query {query} to the key {key}: the cells add up to "
            f"the score {score:+.2f} (each row's and column's total is in its label). The largest part, {gv:+.2f}, "
            f"is the query's {gq} times the key's {gk}; the largest single pair, {value:+.2f}, is the query's {q} "
            f"times the key's {k} (the table lists the top pairs). Blue cells raise the score, red cells lower it, as the graph's edges do.")
