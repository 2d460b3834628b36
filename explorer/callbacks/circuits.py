"""Heads tab, circuits: what one head copies and where it looks, read off its weights (OV and QK circuits over
a few tokens, never the whole vocabulary), which earlier heads each head reads from (composition), and the
induction circuit. Weights and scores are computed once per inspected model (shared for shipped models)."""
import numpy as np

from explorer.callbacks import validation
from explorer.callbacks.common import clamp_head, clamp_layer
from explorer.callbacks.heads import _results, report_of
from explorer.common.errors import UserError
from explorer.figures.circuits import (
    composition_figure,
    copying_figure,
    induction_circuit_figure,
    positional_figure,
    token_circuit_figure,
)
from explorer.state.inspected import HeadResults
from explorer.state.session import Session, require_model
from explorer.teaching import captions_circuits
from model_core.analysis.circuits import (
    CircuitError,
    circuit_weights,
    composition_scores,
    copying_scores,
    ov_circuit_rows,
    qk_circuit_rows,
    qk_positional,
    top_k_per_row,
)

MAX_TOKENS = 40  # tokens on each side of a circuit heatmap
MAX_TEXT = 400  # characters of the tokens box read
MAX_TOP_K = 20
KINDS = ("q", "k", "v")
PREVIOUS, INDUCTION = 0.3, 0.3  # role scores above which a head is drawn as a previous-token / induction head
POSITIONS_SHOWN = 64


def weights_of(session: Session):
    results = _results(session)
    if results.circuit_weights is None:
        results.circuit_weights = circuit_weights(session.inspected.model)
    return results.circuit_weights


def scores_of(session: Session) -> HeadResults:
    """The Heads tab's results with the composition and copying scores computed."""
    results = _results(session)
    if results.composition is None:
        results.composition = composition_scores(session.inspected.model)
        results.copying = copying_scores(session.inspected.model)
    return results


def circuit_tokens(session: Session, tokens) -> list[int]:
    """The tokens a circuit is shown over: those of the text given (at most MAX_TOKENS, each once), else the
    whole vocabulary when it is small, else the first MAX_TOKENS token ids."""
    tok = session.inspected.tokenizer
    if tokens is not None and not isinstance(tokens, str):
        raise UserError("Tokens: type some text (its tokens are shown), or leave it empty.")
    text = (tokens or "")[:MAX_TEXT]
    if text.strip():
        ids = list(dict.fromkeys(tok.encode(tok.strip_unknown(text))))[:MAX_TOKENS]
        if not ids:
            raise UserError("None of those tokens is in this model's vocabulary: type some of its tokens.")
        return ids
    return list(range(min(MAX_TOKENS, session.inspected.model.cfg.vocab_size)))


def head_circuits_view(session: Session, layer, head, tokens: str = "", top_k=5):
    """-> OV circuit figure, QK circuit figure, positional QK figure (or None), top outputs rows, caption."""
    require_model(session)
    layer, head = clamp_layer(session, layer), clamp_head(session, head)
    k = validation.whole_number(top_k, "Top k", minimum=1, maximum=MAX_TOP_K, default=5)
    ids = circuit_tokens(session, tokens)
    w, model, label = weights_of(session), session.inspected.model, session.inspected.tokenizer.token_label
    names = [label(i) for i in ids]
    try:
        ov = ov_circuit_rows(model, layer, head, ids, ids, weights=w)
        qk = qk_circuit_rows(model, layer, head, ids, ids, weights=w)
        full = ov_circuit_rows(model, layer, head, ids, weights=w)  # [S, vocab]: the rows, never vocab x vocab
        positional = None if w.W_pos is None else qk_positional(model, layer, head, weights=w)[:POSITIONS_SHOWN,
                                                                                            :POSITIONS_SHOWN]
    except CircuitError as err:
        raise UserError(str(err)) from None
    values, cols = top_k_per_row(full, k)
    rows = [[names[i], " ".join(f"{label(int(c))} ({v:+.2f})" for c, v in zip(cols[i], values[i]))]
            for i in range(len(ids))]
    copying = float(scores_of(session).copying[layer, head])
    self_top = float(np.mean(cols[:, 0] == np.asarray(ids)))
    caption = captions_circuits.head_caption(layer, head, copying, self_top, qk, names, model.cfg.positional,
                                             positional)
    return (token_circuit_figure(ov, names, names, f"OV circuit of L{layer}·H{head}: attending to a token raises "
                                 "these logits", "attended token", "output token", "logit"),
            token_circuit_figure(qk, names, names, f"QK circuit of L{layer}·H{head}: which token a token looks at",
                                 "query token", "key token", "score"),
            None if positional is None else positional_figure(positional, layer, head), rows, caption)


def composition_view(session: Session, kind: str = "k"):
    """-> composition heatmap, induction circuit figure, copying scores figure, caption."""
    require_model(session)
    kind = validation.choice((kind or "k").lower(), "Composition", KINDS)
    results = scores_of(session)
    scores, copying = results.composition[kind], results.copying
    cfg = session.inspected.model.cfg
    report = report_of(session)
    prev = report.scores["previous token"]
    ind = report.scores["induction"]
    previous = {(a, b): float(prev[a, b]) for a in range(cfg.n_layers) for b in range(cfg.n_heads)
                if prev[a, b] >= PREVIOUS}
    induction = {(a, b): float(ind[a, b]) for a in range(cfg.n_layers) for b in range(cfg.n_heads)
                 if ind[a, b] >= INDUCTION}
    links = induction_links(results.composition["k"], previous, induction)
    caption = captions_circuits.composition_caption(scores, kind, links, previous, induction, copying)
    return (composition_figure(scores, kind), induction_circuit_figure(cfg.n_layers, cfg.n_heads, previous, induction,
                                                                       links), copying_figure(copying), caption)


def induction_links(k_scores, previous: dict, induction: dict) -> list[tuple]:
    """For each induction head, the previous-token head of an earlier layer it K-composes with most:
    [(layer1, head1, layer2, head2, score)], strongest first."""
    links = []
    for (l2, h2) in induction:
        candidates = [(float(k_scores[l1, h1, l2, h2]), l1, h1) for (l1, h1) in previous if l1 < l2]
        if candidates:
            score, l1, h1 = max(candidates)
            links.append((l1, h1, l2, h2, score))
    return sorted(links, key=lambda link: -link[-1])
