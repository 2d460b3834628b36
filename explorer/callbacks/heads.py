"""Heads tab: the head report card, the induction view, examples from the whole validation text, and roles
forming over training.

The report and the examples pass are computed once per inspected model and kept in its caches (ModelCaches.heads);
for an unmodified shipped model they are computed once per server and shared (every session sees the same
model). Per-session memory: the report (~the probe's [L, H, 64, 64] mean pattern, 256 kB for 4x4 heads) plus
the examples (k = 10 per neuron and head: ~250 kB for the Shakespeare model)."""
import html
import threading
from collections import OrderedDict

import numpy as np
import torch

from explorer.callbacks import validation
from explorer.callbacks.common import clamp_head, clamp_layer
from explorer.callbacks.experiments import validation_source
from explorer.callbacks.work_budget import limit_ops
from explorer.common.errors import UserError
from explorer.figures.roles import (
    TRACKED_ROLES,
    aligned_signs,
    embedding_frames_figure,
    film_strip_figure,
    induction_loss_figure,
    induction_pattern_figure,
    report_table,
    role_map_figure,
    role_scores_over_steps_figure,
)
from explorer.state.inspected import HeadResults
from explorer.state.session import Session, require_model
from explorer.teaching import captions_roles
from model_core.analysis.cost import forward_ops
from model_core.analysis.probes import ProbeError, head_report
from model_core.analysis.scale import is_large, window_tokens
from model_core.analysis.top_examples import TopExamples, top_examples

CONTEXT_BEFORE, CONTEXT_AFTER = 24, 8  # tokens of context shown around an example
SHARED_MODELS = 4  # shipped models whose results stay shared between sessions
EXAMPLE_KINDS = ("neuron", "head")
LARGE_EXAMPLE_TOKENS = 2048  # a large model scans the first 2,048 tokens of the text (about 10 s on 2 cores)

_shared: "OrderedDict[str, HeadResults]" = OrderedDict()  # shipped model key -> results
_shared_lock = threading.Lock()


def _results(session: Session) -> HeadResults:
    """The cached results for the session's current model (new ones when the model changes)."""
    if session.inspected.shared_key:
        with _shared_lock:
            results = _shared.setdefault(session.inspected.shared_key, HeadResults())
            _shared.move_to_end(session.inspected.shared_key)
            while len(_shared) > SHARED_MODELS:
                _shared.popitem(last=False)
            return results
    return session.inspected.caches.heads


def _validation_ids(session: Session):
    """(name, token ids) of the model's validation text, or (None, None) when it is unknown."""
    try:
        return validation_source(session)
    except UserError:
        return None, None


def report_of(session: Session):
    results = _results(session)
    if results.report is None:
        name, ids = _validation_ids(session)
        source = f"windows of the validation text of {name}" if name else "the validation text"
        try:
            results.report = head_report(session.inspected.model, ids, text_source=source,
                                            window=window_tokens(session.inspected.config))
        except ProbeError as err:
            raise UserError(str(err)) from None
    return results.report


def heads_report_view(session: Session):
    """-> role map figure, report rows, caption, induction loss figure, induction pattern figure, caption."""
    require_model(session)
    report = report_of(session)
    cfg = session.inspected.model.cfg
    ind = report.induction
    induction = ind.scores["induction"]
    layer, head = np.unravel_index(int(np.argmax(induction)), induction.shape)
    return (
        role_map_figure([r.label for r in report.roles], [r.score for r in report.roles], cfg.n_layers, cfg.n_heads),
        report_table(report.roles, report.scores),
        captions_roles.report_caption(report.roles, report.text_source, report.notes),
        induction_loss_figure(ind.loss, ind.probe.length),
        induction_pattern_figure(ind.pattern[layer, head], ind.probe.length, int(layer), int(head),
                                 float(induction[layer, head])),
        captions_roles.induction_caption(ind.first_copy_loss, ind.second_copy_loss, induction, cfg.vocab_size),
    )


def examples_of(session: Session, progress=None) -> tuple[TopExamples, torch.Tensor]:
    """The examples pass over the model's validation split (cached), and the split's ids."""
    name, ids = _validation_ids(session)
    if ids is None:
        raise UserError("This model's validation text is unknown (it was not trained on a built-in corpus): "
                        "prepare its text on the Data tab with the same tokenizer, then try again.")
    results = _results(session)
    if results.examples is None:
        report = (lambda f: progress(f, desc="Scanning the validation text")) if progress else None
        cfg = session.inspected.config
        if is_large(cfg):  # the first tokens only, in short windows and small batches: bounded memory
            ids = ids[:LARGE_EXAMPLE_TOKENS]
            results.examples = top_examples(session.inspected.model, ids, progress=report, batch_tokens=256,
                                            window=window_tokens(session.inspected.config))
        else:  # the whole text, or as much of it as the heavy-work limit allows
            ids = ids[:max(2, int(limit_ops() / forward_ops(cfg, 1, cfg.block_size)) * cfg.block_size)]
            results.examples = top_examples(session.inspected.model, ids, progress=report)
    return results.examples, ids[:results.examples.n_tokens]


def examples_view(session: Session, kind, layer, index, progress=None):
    """-> examples HTML, caption markdown, dead-neuron caption markdown."""
    require_model(session)
    kind = validation.choice(kind or "neuron", "Examples of", EXAMPLE_KINDS)
    cfg = session.inspected.model.cfg
    layer = clamp_layer(session, layer)
    if kind == "neuron":
        if cfg.attn_only:
            raise UserError("This model is attention-only: it has no feed-forward neurons. Choose 'head' instead.")
        index = validation.whole_number(index, "Neuron", minimum=0, maximum=cfg.d_mlp - 1, default=0)
    else:
        index = validation.whole_number(index, "Head", minimum=0, maximum=cfg.n_heads - 1, default=0)
    examples, ids = examples_of(session, progress)
    label = session.inspected.tokenizer.token_label
    note = ""
    if is_large(cfg):
        note = f" Only the first {examples.n_tokens:,} tokens of the text were scanned: this model is large."
    elif examples.n_tokens < len(_validation_ids(session)[1]):
        note = (f" Only the first {examples.n_tokens:,} tokens of the text were scanned: all of it would take longer "
                "than this server gives one request.")
    if kind == "neuron":
        values, positions = examples.neuron_values[layer, index], examples.neuron_positions[layer, index]
        rows = [_row(ids, label, int(p), None, float(v), "the token where the neuron fires") for p, v in
                zip(positions, values)]
        caption = captions_roles.neuron_examples_caption(
            layer, index, values, float(examples.firing_rate[layer, index]), examples.n_tokens,
            [r["focus"] for r in rows], examples.seconds)
        return examples_html(rows), caption + note, captions_roles.dead_neurons_caption(examples.firing_rate)
    values, queries, keys = (examples.head_values[layer, index], examples.head_queries[layer, index],
                             examples.head_keys[layer, index])
    rows = [_row(ids, label, int(q), int(k), float(v), "the query") for q, k, v in zip(queries, keys, values)]
    dead = captions_roles.dead_neurons_caption(examples.firing_rate) if examples.firing_rate is not None else ""
    return (examples_html(rows), captions_roles.head_examples_caption(layer, index, values, queries - keys,
                                                                      examples.seconds) + note, dead)


def examples_html(rows: list[dict]) -> str:
    """rows of {rank, value, left, focus, middle, key, right, what} -> an HTML list of highlighted contexts.

    For a neuron: focus is the token that fired (key, middle empty). For a head: key is the attended token
    and focus the query; middle is the text between them."""
    if not rows:
        return "<p>No examples.</p>"
    items = []
    for r in rows:
        esc = lambda s: html.escape(s).replace("\n", "⏎")  # noqa: E731 - line breaks shown, not followed
        key = (f"<mark style='background:#bfdbfe' title='key'>{esc(r['key'])}</mark>{esc(r['middle'])}"
               if r.get("key") is not None else "")
        items.append(f"<li><b>{r['value']:.3f}</b> <code class='te-ctx'>{esc(r['left'])}{key}"
                     f"<mark style='background:#fde68a' title='{html.escape(r['what'])}'>{esc(r['focus'])}</mark>"
                     f"{esc(r['right'])}</code></li>")
    return "<ol class='te-examples'>" + "".join(items) + "</ol>"


def _row(ids: torch.Tensor, label, focus: int, key, value: float, what: str) -> dict:
    """One example: the focus token (and the key a head attends to) with context around it."""
    text = lambda a, b: "".join(label(int(t)) for t in ids[max(a, 0): max(b, 0)].tolist())  # noqa: E731
    start = (focus if key is None else key) - CONTEXT_BEFORE
    if key is None or key == focus:
        return dict(value=value, left=text(start, focus), key=None, middle="", focus=text(focus, focus + 1),
                    right=text(focus + 1, focus + 1 + CONTEXT_AFTER), what=what)
    return dict(value=value, left=text(start, key), key=text(key, key + 1), middle=text(key + 1, focus),
                focus=text(focus, focus + 1), right=text(focus + 1, focus + 1 + CONTEXT_AFTER), what=what)


def film_view(session: Session, layer, head):
    """-> film strip figure, role scores over steps figure, embedding frames figure, caption markdown."""
    require_model(session)
    snaps = session.inspected.checkpoint.snapshots or []
    if not snaps:
        raise UserError("This model has no training snapshots: train one on the Train tab (or pick a shipped "
                        "model) to watch its heads form.")
    layer, head = clamp_layer(session, layer), clamp_head(session, head)
    shown = snaps if len(snaps) <= 12 else [snaps[round(i * (len(snaps) - 1) / 11)] for i in range(12)]
    tokens = [session.inspected.tokenizer.token_label(t) for t in shown[-1].probe_ids]
    same_probe = [s for s in shown if s.probe_ids == shown[-1].probe_ids]
    strip = film_strip_figure(np.stack([s.pattern()[layer, head] for s in same_probe]),
                              [f"step {s.step:,}" for s in same_probe], tokens, layer, head)
    steps = [s.step for s in snaps]
    scores = {title: [float(s.head_stats[key][layer, head]) for s in snaps] for key, title in TRACKED_ROLES.items()
              if all(key in s.head_stats for s in snaps)}
    val = [np.nan if s.val_loss is None else s.val_loss for s in snaps]
    lines = role_scores_over_steps_figure(steps, scores, layer, head, val)
    with_coords = [s for s in snaps if s.embedding_coords is not None]
    labels = [session.inspected.tokenizer.token_label(i) for i in range(session.inspected.model.cfg.vocab_size)]
    frames = (embedding_frames_figure([s.embedding_coords for s in with_coords], [s.step for s in with_coords],
                                      labels) if with_coords else None)
    caption = captions_roles.film_caption(layer, head, steps, scores.get("induction"), np.asarray(val, dtype=float))
    if with_coords:
        caption += " " + captions_roles.embedding_motion_caption(
            aligned_signs([s.embedding_coords for s in with_coords]), [s.step for s in with_coords], labels)
    return strip, lines, frames, caption
