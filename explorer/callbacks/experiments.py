"""Experiments tab: knock out heads, layers or neurons and compare the model before and after; the importance map."""
import html
import re

import torch

from explorer.callbacks import validation
from explorer.callbacks.common import clamp_query, prompt_ids
from explorer.callbacks.sampling import new_tokens, settings
from explorer.callbacks.work_budget import fits, largest_fitting, refuse_unless_fits
from explorer.common.errors import UserError
from explorer.figures.common import index_labels
from explorer.figures.experiments import importance_figure, loss_change_figure, next_token_change_figure
from explorer.state.inspected import Evaluation
from explorer.state.session import Session, require_model
from explorer.teaching.captions_experiments import ablation_caption, importance_caption
from model_core.analysis.ablation import (
    ABLATION_MODES,
    EVAL_WINDOWS,
    Ablation,
    ablated_generation,
    ablated_logits,
    component_means,
    corpus_validation_ids,
    eval_windows,
    importance_map,
    token_losses,
    validation_loss,
)
from model_core.analysis.attribution_patching import importance_estimate
from model_core.analysis.cost import ablation_map_ops, forward_ops, generation_ops
from model_core.analysis.scale import LARGE_EVAL_WINDOWS, is_large, window_tokens
from model_core.data.corpora import CORPORA
from model_core.data.tokenization import visible

MAX_UNITS = 64  # units knocked out at once: enough for any experiment, and a bound on the hooks' work
CONTEXT_TOKENS = 3  # tokens of context shown before a hard-hit token in the caption
PAIR = re.compile(r"^(\d{1,6})\.(\d{1,6})$")
HEAD = re.compile(r"^L(\d{1,6})·?H(\d{1,6})$", re.IGNORECASE)  # a head as captions name it: L1·H3 (or L1H3)
LAYER = re.compile(r"^\d{1,6}$")
FALLBACK_CORPUS = "shakespeare"  # the evaluation text of a large model trained elsewhere (SmolLM2)


# ---------------------------------------------------------------- what to knock out

def unit_entries(value, name: str) -> list[str]:
    """'1.3, 2.0 ; 0.1' -> ['1.3', '2.0', '0.1']; empty -> []; a non-text value -> a message."""
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UserError(f"{name} must be text, such as 1.3, 2.0.")
    entries = [e for e in re.split(r"[,;\s]+", str(value).strip()) if e]
    if len(entries) > MAX_UNITS:
        raise UserError(f"{name}: knock out at most {MAX_UNITS} at once ({len(entries)} given).")
    return entries


def parse_pairs(value, name: str, example: str, forms=(PAIR,)) -> tuple:
    """'1.3, 2.0' -> ((1, 3), (2, 0)), duplicates dropped (forms: the patterns an entry may match); anything else
    gets a message with an example."""
    pairs = []
    for entry in unit_entries(value, name):
        match = next((m for m in (form.match(entry) for form in forms) if m), None)
        if not match:
            raise UserError(f"{name}: “{entry[:20]}” is not layer.index; write {example}.")
        pairs.append((int(match.group(1)), int(match.group(2))))
    return tuple(dict.fromkeys(pairs))


def parse_layers(value, name: str) -> tuple:
    """'0, 2' -> (0, 2), duplicates dropped."""
    layers = []
    for entry in unit_entries(value, name):
        if not LAYER.match(entry):
            raise UserError(f"{name}: “{entry[:20]}” is not a layer number; write layers such as 0, 2.")
        layers.append(int(entry))
    return tuple(dict.fromkeys(layers))


def ablation_from_inputs(session: Session, heads, attn_layers, mlp_layers, neurons) -> Ablation:
    """The checked Ablation, or a message when it is empty or names a unit the model lacks."""
    ablation = Ablation(
        heads=parse_pairs(heads, "Heads", "heads as layer.head, such as 1.3 for L1·H3 (several: 1.3, 2.0)",
                          (PAIR, HEAD)),
        attn_layers=parse_layers(attn_layers, "Attention layers"),
        mlp_layers=parse_layers(mlp_layers, "FFN layers"),
        neurons=parse_pairs(neurons, "Neurons", "neurons as layer.neuron, such as 0.17"),
    )
    if ablation.is_empty():
        raise UserError("Nothing to knock out: type a head such as 1.3 (L1·H3) in “Heads”, or a layer or a neuron.")
    return ablation.validate(session.inspected.model.cfg)


def ablation_mode(value) -> str:
    return validation.choice(value or "mean", "Ablation", ABLATION_MODES)


# ---------------------------------------------------------------- the fixed evaluation set

def validation_source(session: Session) -> tuple[str, torch.Tensor]:
    """(name, validation token ids) for the inspected model: its built-in training corpus, else the text the
    Data tab prepared when its tokenizer is the model's."""
    corpus = session.inspected.checkpoint.corpus
    if corpus in CORPORA:
        return corpus, corpus_validation_ids(corpus, session.inspected.tokenizer)
    data = session.workspace.data
    if data is not None and data.tokenizer.to_dict() == session.inspected.tokenizer.to_dict():
        return data.name, data.val
    if is_large(session.inspected.config):  # a pretrained model: any English text it was not trained on here will do
        return (f"{FALLBACK_CORPUS} (a text this pretrained model was not trained on here)",
                corpus_validation_ids(FALLBACK_CORPUS, session.inspected.tokenizer))
    raise UserError("This model's validation text is unknown (it was not trained on a built-in corpus): prepare "
                    "its text on the Data tab with the same tokenizer, then try again.")


def evaluation_set(session: Session) -> Evaluation:
    """The inspected model's evaluation windows (and what was measured on them), kept until the model or the data
    changes."""
    data = session.workspace.data
    data_id = id(data.val) if data is not None else None
    caches = session.inspected.caches
    if caches.evaluation is None or caches.evaluation.data_id != data_id:
        name, ids = validation_source(session)
        cfg = session.inspected.config
        windows = eval_windows(ids, window_tokens(cfg), LARGE_EVAL_WINDOWS if is_large(cfg) else EVAL_WINDOWS)
        caches.evaluation = Evaluation(name, windows, data_id)
    return caches.evaluation


def means_for(session: Session, mode: str):
    """None for zero ablation; the cached mean activations over the evaluation windows for mean ablation."""
    if mode == "zero":
        return None
    evaluation = evaluation_set(session)
    if evaluation.means is None:
        evaluation.means = component_means(session.inspected.model, evaluation.windows)
    return evaluation.means


# ---------------------------------------------------------------- the views

def ablation_view(session: Session, prompt, heads, attn_layers, mlp_layers, neurons, mode, position, temperature,
                  max_new_tokens, seed, drop_unknown=False):
    """-> loss-per-position figure, next-token figure, generations (HTML), numbers (markdown), caption."""
    require_model(session)
    ablation = ablation_from_inputs(session, heads, attn_layers, mlp_layers, neurons)
    mode, knobs = ablation_mode(mode), settings(temperature, 0, 1.0, 0.0)
    n, seed = new_tokens(max_new_tokens), validation.seed(seed)
    model, tok = session.inspected.model, session.inspected.tokenizer
    ids = prompt_ids(session, prompt, drop_unknown)
    if len(ids) < 2:
        raise UserError("Type at least two tokens: the loss at a position needs a next token to compare with.")
    query = clamp_query(position, len(ids))
    refuse_costly_ablation(session, len(ids), n)
    means, evaluation = means_for(session, mode), evaluation_set(session)
    idx = torch.tensor([ids])
    before, after = ablated_logits(model, idx, Ablation(), None)[0], ablated_logits(model, idx, ablation, means)[0]
    loss_before, loss_after = (token_losses(lg[None, :-1], idx[:, 1:])[0].numpy() for lg in (before, after))
    val_before = validation_loss(model, evaluation.windows)
    val_after = validation_loss(model, evaluation.windows, ablation, means)
    labels = [tok.token_label(i) for i in ids]
    contexts = [visible(tok.decode(ids[max(0, t + 1 - CONTEXT_TOKENS):t + 1])) for t in range(len(ids) - 1)]
    vocab = [tok.token_label(i) for i in range(model.cfg.vocab_size)]
    where = f"after {query}:{labels[query]} ({'end of the prompt' if query == len(ids) - 1 else 'inside the prompt'})"
    generations = [ablated_generation(model, ids, a, means, n, knobs, seed) for a in (Ablation(), ablation)]
    targets = index_labels(labels)[1:]  # the loss at position t is for predicting token t + 1
    return (loss_change_figure(loss_before, loss_after, targets),
            next_token_change_figure(torch.softmax(before[query], -1).numpy(), torch.softmax(after[query], -1).numpy(),
                                     vocab, where),
            generations_html(tok, prompt, ablation, generations, knobs.temperature, seed),
            numbers_table(evaluation, val_before, val_after, loss_before.mean(), loss_after.mean()),
            ablation_caption(ablation.describe(), mode, val_before, val_after, loss_after - loss_before, targets,
                             contexts))


def refuse_costly_ablation(session: Session, prompt_tokens: int, new: int) -> None:
    """UserError saying how many new tokens fit when the ablation's passes are over the heavy-work limit."""
    cfg, windows = session.inspected.config, evaluation_set(session).windows
    fixed = 2 * forward_ops(cfg, 1, prompt_tokens) + 3 * forward_ops(cfg, windows.shape[0], windows.shape[1] - 1)
    cost = lambda n: fixed + 2 * generation_ops(cfg, prompt_tokens, n)  # noqa: E731 - with n new tokens
    if fits(cost(new)):
        return
    most = largest_fitting(cost, new)
    refuse_unless_fits(cost(new), f"Two continuations of {new} tokens (with and without the ablation), the prompt and "
                                  "the validation text through the model",
                       f"To fit, ask for at most {most} new tokens." if most >= 1 else "Shorten the prompt.")


def generations_html(tok, prompt: str, ablation: Ablation, generations: list, temperature: float, seed: int) -> str:
    """Two columns: the intact model's continuation and the ablated one's, from the same prompt and seed."""
    heads = ["Intact model", f"Without {ablation.describe()}"]
    cells = []
    for head, steps in zip(heads, generations):
        text = tok.decode([s.token for s in steps])
        mean_logprob = steps[-1].logprob / len(steps) if steps else 0.0
        cells.append(
            f"<div class='te-col'><div class='te-col-head'>{html.escape(head)}</div>"
            f"<pre class='te-gen'><b>{html.escape(prompt)}</b>{html.escape(text)}</pre>"
            f"<div class='te-metrics'>mean log-prob under this model <b>{mean_logprob:.2f}</b></div></div>")
    note = f"Same prompt, seed {seed} and temperature {temperature:g} in both columns."
    return f"<div class='te-compare'>{''.join(cells)}</div><div class='te-metrics'>{note}</div>"


def numbers_table(evaluation: Evaluation, val_before: float, val_after: float, prompt_before: float,
                  prompt_after: float) -> str:
    windows = evaluation.windows
    rows = [("Validation loss (nats per token)", val_before, val_after),
            ("Loss on this prompt", prompt_before, prompt_after)]
    lines = ["| | intact | with the ablation | change |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {b:.3f} | {a:.3f} | {a - b:+.3f} |" for name, b, a in rows]
    lines.append(f"\nValidation text: {windows.shape[0]} windows of {windows.shape[1] - 1} tokens from the "
                 f"validation split of **{html.escape(evaluation.name)}**, chosen with a fixed seed (the same "
                 "windows every time). The val loss in the header was measured by the model's training, on other "
                 "windows of the same split, so the intact loss here differs from it a little.")
    return "\n".join(lines)


def cached_importance_map(session: Session, mode: str):
    evaluation = evaluation_set(session)
    if mode not in evaluation.maps:
        windows, cfg = evaluation.windows, session.inspected.config
        exact = not is_large(cfg) and fits(ablation_map_ops(cfg, windows.shape[0], windows.shape[1] - 1))
        measure = importance_map if exact else importance_estimate  # a large model's 300 real ablations: minutes
        evaluation.maps[mode] = measure(session.inspected.model, evaluation.windows, mode, means_for(session, mode))
    return evaluation.maps[mode]


def importance_view(session: Session, mode):
    """-> importance heatmap (+ FFN bars), caption."""
    require_model(session)
    mode = ablation_mode(mode)
    imap = cached_importance_map(session, mode)
    return (importance_figure(imap.head_increase, imap.mlp_increase, mode),
            importance_caption(imap.base_loss, imap.head_increase, imap.mlp_increase, imap.estimated))


def top_head_inputs(session: Session, mode):
    """-> the four unit boxes set to knock out only the head the importance map names."""
    require_model(session)
    layer, head = cached_importance_map(session, ablation_mode(mode)).top_head()
    return f"{layer}.{head}", "", "", ""
