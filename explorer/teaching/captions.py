"""One-line, data-derived captions for every chart, in plain English for students new to transformers.

Pure functions: numpy arrays (+ labels) in, one sentence out. Positions are written index:token ('5:e'),
vocabulary tokens in quotes ('e')."""
from collections import Counter

import numpy as np

from explorer.figures.common import head_label, index_labels, label_step, stream_labels
from explorer.figures.sampling import SEED_LOGITS, softmax

SINK_THRESHOLD = 0.5  # a head putting more than this on the first token is a "sink" head
FOCUSED_BITS = 0.5  # a row's entropy below this is "about one token" (2 ** 0.5 ≈ 1.4 equal shares)
Z_EXPLAINED = ("The last panel, the head output z, is what each row passes on: the value vectors of the keys mixed "
               "with these weights (one column per number of the head's output).")
SAME_SIZE = 1.25  # embedding sizes within this ratio are "about the same"
NUMBER_WORDS = {1: "first component", 2: "first two components", 3: "first three components"}


def _pct(x: float) -> str:
    return f"{float(x):.0%}"


def chart_captions(captions: dict[str, str]) -> str:
    """{chart name: caption} -> one markdown line per chart ('- **Selected head:** Head L1·H2 puts ...')."""
    return "\n".join(f"- **{chart}:** {text}" for chart, text in captions.items() if text)


def labels_shown(fig, axes: dict[str, str]) -> str:
    """' Labelled: every 3rd key position (hover a cell for its own).' for the axes {layout key: what its
    categories are} that label only every k-th category (explorer.figures.common.label_step); '' when all do."""
    thinned = [f"every {_ordinal(step)} {what}" for what, step in
               {what: label_step(fig, key) for key, what in axes.items()}.items() if step > 1]
    return f" Too many to label each: labelled are {' and '.join(thinned)} (hover for any one)." if thinned else ""


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def attention_steps_caption(scores_masked, pattern, tokens: list[str]) -> str:
    """How much the causal mask hides, and the sharpest query after softmax."""
    masked = float(np.isneginf(np.asarray(scores_masked, dtype=np.float64)).mean())
    p, labels = np.asarray(pattern, dtype=np.float64), index_labels(tokens)
    if len(tokens) < 2:
        return "With a single token there is nothing to mask: it can only attend to itself."
    query = int(np.argmax(p[1:].max(axis=1))) + 1  # skip query 0, which can only see itself
    key = int(np.argmax(p[query]))
    return (f"The causal mask hides {_pct(masked)} of the scores (keys in the future); after softmax each row "
            f"sums to 1, and the sharpest query, {labels[query]}, puts {_pct(p[query, key])} on {labels[key]}. "
            f"{Z_EXPLAINED}")


def query_attention_caption(pattern, tokens: list[str], query: int) -> str:
    """'5:e can see keys 0:F to 5:e and puts the most attention, 78%, on 4:h (the previous token).' When the head
    is a previous-token head over all its rows and this row looks elsewhere, says so: a head's name is its habit."""
    pattern = np.asarray(pattern, dtype=np.float64)
    labels, weights = index_labels(tokens), pattern[query, : query + 1]
    key = int(np.argmax(weights))
    where = {query: " (itself)", query - 1: " (the previous token)"}.get(key, " (the first token)" if key == 0 else "")
    text = (f"{labels[query]} can see keys {labels[0]} to {labels[query]} and puts the most attention, "
            f"{_pct(weights[key])}, on {labels[key]}{where}.")
    habit = float(np.diagonal(pattern, -1).mean()) if len(pattern) > 1 else 0.0
    if habit > 0.5 and key != query - 1 and query > 0:
        text += (f" Over all its rows this head puts {_pct(habit)} on the previous token (a previous-token head): "
                 "this row is an exception.")
    return text


def grid_caption(stats: dict[str, np.ndarray]) -> str:
    """Strongest previous-token head, plus the strongest sink head (or the most spread-out head); a model with one
    head is described alone, without comparing it to others."""
    prev, first = np.asarray(stats["prev_token"]), np.asarray(stats["first_token"])
    entropy = np.asarray(stats["entropy"])
    if prev.size == 1:
        return (f"The only head, {head_label(0, 0)}, puts {_pct(prev.flat[0])} of its attention on the previous token "
                f"and {_pct(first.flat[0])} on the first; {_spread(float(entropy.flat[0]))}.")
    best = np.unravel_index(np.argmax(prev), prev.shape)
    text = f"The strongest previous-token head is {head_label(*best)} ({_pct(prev[best])})"
    sink = np.unravel_index(np.argmax(first), first.shape)
    if first[sink] > SINK_THRESHOLD:
        return text + f"; {head_label(*sink)} mostly attends to the first token (sink, {_pct(first[sink])})."
    wide = np.unravel_index(np.argmax(entropy), entropy.shape)
    if entropy[wide] < FOCUSED_BITS:
        return text + f"; every head keeps each row on about one token (at most {float(entropy[wide]):.1f} bits)."
    return text + f"; {head_label(*wide)} spreads its attention most widely ({float(entropy[wide]):.1f} bits)."


def _spread(bits: float) -> str:
    """'its rows spread over about 3 tokens (1.6 bits)': 2 ** entropy is how many equal shares it is like."""
    if bits < FOCUSED_BITS:
        return f"each row keeps its attention on about one token ({bits:.1f} bits)"
    return f"its rows spread their attention over about {2 ** bits:.0f} tokens ({bits:.1f} bits)"


def overview_caption(stats: dict[str, np.ndarray], layer: int) -> str:
    """{stat: [L, H]} -> what the large-model overview's three maps show (raw shares, where the roles judge what is
    left after the first token), the head with the largest first-token share, and the layer drawn in detail."""
    first = np.asarray(stats["first_token"])
    n_layers, n_heads = first.shape
    top = np.unravel_index(int(np.argmax(first)), first.shape)
    return (f"The three maps give each of the {n_layers * n_heads} heads its whole share of attention on the previous "
            f"token, on itself and on the first token (up to {_pct(first[top])}, {head_label(*top)}); below, the "
            f"patterns of layer {layer}'s {n_heads} heads.")


def residual_caption(resid_pre, resid_post, attn_out) -> str:
    """[L, T] norms -> 'The residual stream grows from 1.2 to 7.9 across 4 layers; attention updates are 14% ...'"""
    start, end = float(np.mean(resid_pre[0])), float(np.mean(resid_post[-1]))
    verb = "grows" if end > 1.05 * start else "shrinks" if end < 0.95 * start else "stays about the same,"
    share = float(np.mean(np.mean(attn_out, axis=1) / np.maximum(np.mean(resid_pre, axis=1), 1e-12)))
    n_layers = len(resid_pre)
    return (f"The residual stream {verb} from {start:.1f} to {end:.1f} across {n_layers} "
            f"layer{'s' * (n_layers != 1)}; attention updates are {_pct(share)} of its size.")


def update_norms_caption(attn_out, mlp_out) -> str:
    """[L, T] update norms -> which block writes more, and the single biggest update."""
    attn, mlp = np.mean(attn_out, axis=1), np.mean(mlp_out, axis=1)
    bigger = int((mlp > attn).sum())
    block, layer = ("FFN", int(np.argmax(mlp))) if mlp.max() >= attn.max() else ("attention", int(np.argmax(attn)))
    return (f"The FFN writes more than attention in {bigger} of {len(attn)} layers; the biggest update is the "
            f"{block} in layer {layer} (norm {max(mlp.max(), attn.max()):.2f}).")


def update_vs_residual_caption(update, residual, tokens: list[str], layer: int) -> str:
    """[T] norms -> average relative update size and where it is largest."""
    ratio = np.asarray(update, dtype=np.float64) / np.maximum(np.asarray(residual, dtype=np.float64), 1e-12)
    top = int(np.argmax(ratio))
    return (f"In layer {layer} the attention update is {_pct(ratio.mean())} of the residual's size on average; "
            f"it changes {index_labels(tokens)[top]} the most ({_pct(ratio[top])}).")


def variance_caption(resid_var, attn_var, layer: int) -> str:
    """[T] variances -> how big attention's output is compared to its input stream."""
    ratio = float(np.mean(attn_var)) / max(float(np.mean(resid_var)), 1e-12)
    size = f"{ratio:.2f}×" if ratio >= 0.01 else "less than 0.01×"  # "0.00×" reads as nothing at all
    return (f"In layer {layer} the attention output varies {size} as much as the residual stream it is "
            f"added to, so each layer {'nudges' if ratio < 1 else 'strongly rewrites'} the stream.")


def residual_heatmap_caption(stream, tokens: list[str]) -> str:
    """stream [L+1, T, D] -> growth from embedding to output and the position with the largest final norm."""
    norms = np.linalg.norm(np.asarray(stream, dtype=np.float64), axis=-1)  # [L+1, T]
    growth = norms[-1].mean() / max(norms[0].mean(), 1e-12)
    top = int(np.argmax(norms[-1]))
    return (f"Across layers the stream's size changes {growth:.1f}× on average; at the end "
            f"{index_labels(tokens)[top]} has the largest vector (norm {norms[-1, top]:.1f}).")


def logit_lens_caption(top_labels, top_probs) -> str:
    """[L+1, T] top-1 guesses -> after which layer the final prediction settles as top-1, on average."""
    labels = np.asarray(top_labels, dtype=object)
    agrees = labels == labels[-1]  # [L+1, T]
    settled = np.array([agrees.shape[0] - np.argmin(col[::-1]) if not col.all() else 0 for col in agrees.T])
    names = ["right after the embedding"] + stream_labels(agrees.shape[0] - 1)[1:]
    mean_row = int(round(float(settled.mean())))
    early = int((settled == 0).sum())
    confidence = float(np.mean(top_probs[-1]))
    return (f"On average the final prediction becomes (and stays) the top guess {names[mean_row]}; it is already "
            f"there right after the embedding at {early} of {labels.shape[1]} positions. "
            f"Final confidence: {_pct(confidence)}.")


def embedding_caption(explained) -> str:
    """explained [k] variance ratios -> 'The first two components explain 31% of the variance.'"""
    k = len(explained)
    return f"The {NUMBER_WORDS.get(k, f'first {k} components')} explain {_pct(np.sum(explained))} of the variance."


POSITION_VERDICTS = {  # kind (callbacks.embeddings.position_table_kind) -> what the similarities say of it
    "sinusoidal": "fixed sine waves, the same before and after training (nothing here was learned)",
    "untrained": "random vectors of an untrained model, so no order yet",
}


def positional_caption(W_pos, kind: str = "learned") -> str:
    """W_pos [P, D] -> whether neighbouring positions have similar embeddings (cosine similarity); kind: learned,
    sinusoidal or untrained (only learned ones can have learned an order)."""
    w = np.asarray(W_pos, dtype=np.float64)
    if w.shape[0] < 3:
        return "Too few positions to compare neighbours."
    unit = w / np.maximum(np.linalg.norm(w, axis=1, keepdims=True), 1e-12)
    cos = unit @ unit.T
    gap = np.abs(np.subtract.outer(np.arange(len(w)), np.arange(len(w))))
    near, far = cos[gap == 1].mean(), cos[gap >= max(2, len(w) // 2)].mean()
    verdict = POSITION_VERDICTS.get(kind) or ("the model has learned a smooth sense of order" if near > far + 0.1
                                             else "no smooth order yet")
    return f"Neighbouring positions have cosine similarity {near:.2f}, distant ones {far:.2f}: {verdict}."


def embedding_norms_caption(tok_norms, pos_norms) -> str:
    """[T] norms -> which embedding dominates the model's input."""
    tok, pos = float(np.mean(tok_norms)), float(np.mean(pos_norms))
    if pos < 1e-9:  # rotary or no positions: nothing is added to the token vectors
        return (f"This model adds no position vectors to its input (its positions act inside attention), so the "
                f"input is the token embeddings alone (mean size {tok:.2f}).")
    bigger, smaller, ratio = ("Token", "position", tok / max(pos, 1e-12)) if tok >= pos else \
        ("Position", "token", pos / max(tok, 1e-12))
    if ratio < SAME_SIZE:
        return (f"Token and position embeddings are about the same size on average ({tok:.2f} and {pos:.2f}): "
                "neither dominates the input.")
    return (f"{bigger} embeddings are {ratio:.1f}× the size of {smaller} embeddings on average "
            f"({max(tok, pos):.2f} vs {min(tok, pos):.2f}), so they dominate the input.")


def ffn_caption(fraction_active, dead: int) -> str:
    """fraction_active [M], dead count -> 'On average a neuron is active at 38% of positions; 12 of 512 ...'"""
    n = len(fraction_active)
    return (f"On average a neuron is active at {_pct(np.mean(fraction_active))} of positions; "
            f"{int(dead)} of {n} neurons never fire on this text (dead).")


def ffn_histogram_caption(pre_hist, pre_edges, post_hist, post_edges, activation_name: str = "GELU") -> str:
    """Histograms -> share of negative inputs and how far below zero the outputs reach."""
    centres = (np.asarray(pre_edges[:-1]) + np.asarray(pre_edges[1:])) / 2
    negative = float(np.asarray(pre_hist)[centres < 0].sum()) / max(float(np.sum(pre_hist)), 1.0)
    lowest = float(np.asarray(post_edges)[np.flatnonzero(np.asarray(post_hist) > 0)[0]])
    return (f"{_pct(negative)} of FFN inputs are negative; {activation_name} squashes them towards zero "
            f"(outputs stay above {lowest:.2f}).")


def top_tokens_caption(positions, values, tokens: list[str]) -> str:
    """A neuron's top positions (largest first) -> where it fires hardest, and the tokens of the positions that reach
    a quarter of that peak (the weak tail of the table is left out: it would name tokens the neuron barely sees)."""
    positions, values = np.asarray(positions), np.asarray(values, dtype=np.float64)
    peak = float(values.max())
    if peak <= 0:
        return f"This neuron does not fire on this prompt (its largest activation is {peak:.2f})."
    top = int(positions[int(values.argmax())])
    strong = positions[values >= peak / 4].tolist()
    hardest = f"This neuron fires hardest at {top}:{tokens[top]} ({peak:.2f})"
    if len(strong) == 1:
        return f"{hardest}; none of its other top {len(positions) - 1} positions reaches a quarter of that."
    counts = Counter(tokens[p] for p in strong).most_common()
    listed = ", ".join(f"'{token}'" + (f" ({n})" if n > 1 else "") for token, n in counts)
    return f"{hardest}; {len(strong)} of its top {len(positions)} positions reach a quarter of that, on {listed}."


def sampling_caption(probs_before, probs_after, removed, labels: list[str]) -> str:
    """'Filtering kept 5 of 65 tokens; the top token '␣' now has 62% (was 48%).'"""
    removed = np.asarray(removed, dtype=bool)
    top = int(np.argmax(probs_after))
    now, was = float(probs_after[top]), float(probs_before[top])
    if not removed.any() and _pct(now) != _pct(was):  # only the temperature changed the odds
        return (f"Nothing is cut: all {len(removed)} tokens stay possible; the temperature moves the top token "
                f"'{labels[top]}' from {_pct(was)} to {_pct(now)}.")
    if not removed.any():
        return f"No filtering: all {len(removed)} tokens stay possible; the top token '{labels[top]}' has {_pct(was)}."
    return (f"Filtering kept {int((~removed).sum())} of {len(removed)} tokens; the top token '{labels[top]}' "
            f"now has {_pct(now)} (was {_pct(was)}).")


def temperature_caption(logits, temperatures, labels: list[str] | None = None, current: float | None = None) -> str:
    """The top token's share at each temperature the chart draws, lowest first; current: the slider's, named."""
    values = SEED_LOGITS if logits is None else np.asarray(logits, dtype=np.float64)
    top = int(np.argmax(values))
    name = "the largest logit" if logits is None or labels is None else f"the top token '{labels[top]}'"
    temps = sorted(temperatures)
    shares = [_pct(softmax(values, t)[top]) for t in temps]
    mark = [" (the slider's)" if t == current else "" for t in temps]
    text = f"At temperature {temps[0]:g}{mark[0]} {name} gets {shares[0]}"
    for i in range(1, len(temps)):
        last = "only " if i == len(temps) - 1 and shares[i] != shares[0] else ""
        text += f"; at {temps[i]:g}{mark[i]}, {last}{shares[i]}"
    return text + (": the lower the temperature, the larger its share." if shares[0] != shares[-1] else ".")


def sampling_label(temperature: float, top_k=None, top_p: float = 1.0, min_p: float = 0.0) -> str:
    """'temperature 2', 'temperature 1, top-p 0.75': the sampling settings in force, as the charts name them."""
    parts = ["temperature 0 (always the top token)" if temperature == 0 else f"temperature {temperature:g}"]
    parts += [f"top-k {top_k}"] if top_k else []
    parts += [f"top-p {top_p:g}"] if top_p < 1 else []
    parts += [f"min-p {min_p:g}"] if min_p > 0 else []
    return ", ".join(parts)


def generation_caption(steps: list[dict]) -> str:
    """Generated steps -> average probability of the picks and the least likely pick."""
    if not steps:
        return "Nothing generated yet."
    probs = np.array([float(s["prob"]) for s in steps])
    worst = int(np.argmin(probs))
    return (f"Generated {len(steps)} tokens; the picks had {_pct(probs.mean())} probability on average, and the "
            f"least likely was '{steps[worst]['token_label']}' at step {worst + 1} ({_pct(probs[worst])}).")


def token_index_caption(ids, labels: list[str]) -> str:
    """ids [N] -> how many distinct tokens the text uses and the most common one."""
    counts = Counter(zip(np.asarray(ids).tolist(), labels))
    (token_id, label), count = counts.most_common(1)[0]
    return (f"{len(labels)} positions use {len(counts)} distinct token ids; the most common is '{label}' "
            f"(id {token_id}, {count} times).")
