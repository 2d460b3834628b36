"""Experiments tab, second part: a second model (B) beside the inspected one (A), on the same text.

Model B's slot holds one model at most (memory: at most --max-params x 4 bytes, as the inspected model):
a shipped model, an uploaded .zip, a nanoGPT checkpoint, a copy of the inspected model as it is now (copy
it before training on, and compare "step 200" with "the end"), or an earlier training snapshot of the session's
run (the run keeps the weights of a few, explorer.state.training_run.WEIGHT_SETS_KEPT)."""
import copy
import re
from pathlib import Path

import gradio as gr
import numpy as np
import torch

from explorer.callbacks.models import model_summary, upload_limits
from explorer.callbacks.prompting import encode_prompt, token_labels
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.common.shipped_list import display_name
from explorer.common.wording import model_shape
from explorer.figures.common import head_label
from explorer.figures.compare import attention_pair_figure, character_bits_figure, next_token_pair_figure
from explorer.state.session import Session, require_model
from explorer.state.shipped import load_shipped, shipped_models
from explorer.state.workspace import SecondModel
from explorer.teaching.captions_experiments import compare_caption
from model_core import GPT, GPTConfig
from model_core.analysis.comparison import (
    attention_patterns,
    character_bits,
    chars_per_token,
    pattern_differences,
    prompt_token_losses,
)
from model_core.analysis.scale import analysis_tokens, is_large
from model_core.checkpoints.checkpoint import Checkpoint, CheckpointError, load_checkpoint_zip
from model_core.checkpoints.nanogpt import convert_nanogpt
from model_core.data.tokenization import UnknownTokenError, visible


def second_model(session: Session) -> SecondModel:
    slot = session.workspace.model_b
    if slot is None:
        raise UserError("Choose model B first: a shipped model, an uploaded checkpoint, or a copy of the inspected "
                        "model.")
    return slot


def slot_status(session: Session) -> str:
    b = session.workspace.model_b
    if b is None:
        return "No model B yet."
    cfg = b.checkpoint.model.cfg
    return (f"Model B: **{b.name}**: {model_shape(cfg.n_layers, cfg.n_heads)}, d_model {cfg.d_model}, "
            f"{b.checkpoint.tokenizer.kind} tokenizer with {cfg.vocab_size} tokens, "
            f"{b.checkpoint.model.num_params():,} parameters.")


def keep(session: Session, checkpoint: Checkpoint, name: str) -> str:
    if checkpoint.tokenizer is None:
        raise UserError(f"{name} has no tokenizer, so it cannot read text; save it with its tokenizer.")
    checkpoint.model.eval()
    session.workspace.model_b = SecondModel(checkpoint, name)
    return slot_status(session)


def use_shipped_as_b(session: Session, name) -> str:
    if not isinstance(name, str) or name not in shipped_models():
        raise UserError(f"Pick one of the shipped models: {', '.join(shipped_models())}.")
    return keep(session, load_shipped(name), f"shipped {display_name(name)}")


def copy_inspected_as_b(session: Session) -> str:
    """Model B := a frozen copy of the inspected model (its weights now, whatever happens to A later)."""
    require_model(session)
    c = session.inspected.checkpoint
    return keep(session, Checkpoint(copy.deepcopy(c.model), c.tokenizer, corpus=c.corpus),
                f"copy of {display_name(session.inspected.name)}")


def uploaded_path(upload, what: str) -> Path:
    if not upload:
        raise UserError(f"Choose {what} to upload first.")
    p = Path(upload)
    if not p.is_file():
        raise UserError(f"The uploaded file {p.name} is gone from the server: upload it again.")
    if p.stat().st_size > LIMITS.max_upload_bytes:
        raise UserError(f"{p.name} is {p.stat().st_size / 1e6:.1f} MB; the limit is {LIMITS.max_upload_mb:g} MB.")
    return p


def load_zip_as_b(session: Session, upload) -> str:
    p = uploaded_path(upload, "a .zip checkpoint")
    try:
        ckpt = load_checkpoint_zip(p, upload_limits())
    except CheckpointError as err:  # name the file as the user knows it, not the server's temp path
        raise UserError(str(err).replace(str(p), p.name)) from None
    return keep(session, ckpt, f"uploaded {p.name}")


def load_nanogpt_as_b(session: Session, ckpt_upload, meta_upload) -> str:
    """nanoGPT's ckpt.pt and meta.pkl, converted (no pickled code is ever run), as model B."""
    ckpt_path = uploaded_path(ckpt_upload, "nanoGPT's ckpt.pt")
    meta_path = uploaded_path(meta_upload, "the meta.pkl of its dataset")
    try:
        ckpt = convert_nanogpt(ckpt_path, meta_path, upload_limits())
    except ValueError as err:  # ConvertError, UnsafePickleError: their messages name the file and the problem
        raise UserError(str(err).replace(str(ckpt_path), ckpt_path.name).replace(str(meta_path), meta_path.name)
                        .replace(ckpt_path.parent.name, "upload")) from None
    return keep(session, ckpt, f"nanoGPT {ckpt_path.name}")


def snapshot_menu(session: Session) -> gr.Dropdown:
    """The dropdown of the steps whose weights the session's run keeps ("step N", newest first), its note
    saying what it offers."""
    run = session.workspace.run
    steps = [step for step, _ in (run.progress.snapshot_weights if run else [])][::-1]
    labels = [f"step {step}" for step in steps]
    if run is None:
        note = "No training run in this session yet: train a model on the Train tab, then refresh."
    elif not labels:
        note = ("This run has kept no snapshot weights yet (it keeps them from its first snapshot on, for models "
                f"of at most {LIMITS.max_params:,} parameters with snapshots switched on).")
    else:
        note = f"The run keeps the weights of {len(labels)} snapshots, spread over the run: pick one as model B."
    return gr.Dropdown(choices=labels, value=labels[0] if labels else None, info=note)


def use_snapshot_as_b(session: Session, choice) -> str:
    """Model B := the session's training run's model architecture with the weights of one kept snapshot."""
    run = session.workspace.run
    found = re.fullmatch(r"step (\d+)", choice.strip()) if isinstance(choice, str) else None
    if run is None or found is None:
        raise UserError("Train a model on the Train tab, press “Refresh snapshots” and pick a step first.")
    step = int(found.group(1))
    state = dict(run.progress.snapshot_weights).get(step)
    if state is None:
        raise UserError(f"The run no longer keeps the weights of step {step} (it keeps a few, spread over the run): "
                        "press “Refresh snapshots” and pick another step.")
    t = run.progress
    model = GPT(GPTConfig.from_dict(t.model.cfg.to_dict()))
    model.load_state_dict(state)  # copies: model B never shares storage with the run's list
    before = [h for h in t.history if h["step"] <= step]
    ckpt = Checkpoint(model, t.tokenizer, t.cfg, before, [e for e in t.evals if e["step"] <= step],
                      [s for s in t.snapshots if s.step <= step], run.corpus)
    return keep(session, ckpt, f"training snapshot at step {step} ({run.corpus})")


def swap_models(session: Session):
    """Inspect model B in every tab, and keep the model inspected so far as model B. -> (model line, status)."""
    b = second_model(session)
    old = SecondModel(session.inspected.checkpoint, session.inspected.name)
    session.inspected.use(b.checkpoint, b.name)
    session.workspace.model_b = old
    return model_summary(session), slot_status(session)


# ---------------------------------------------------------------- the comparison

def readable_text(prompt, checkpoints: list, drop_unknown: bool) -> str:
    """The prompt as both models can read it: characters either lacks dropped (if asked), and cut from the
    left until it fits both contexts."""
    encode_prompt(checkpoints[0].tokenizer, prompt, 10**9, drop_unknown)  # empty, too long, broken characters
    text = prompt
    if drop_unknown:
        for c in checkpoints:
            text = c.tokenizer.strip_unknown(text)
    for label, c in zip("AB", checkpoints):
        try:
            c.tokenizer.encode(text)
        except UnknownTokenError as err:
            raise UserError(f"Model {label} cannot read this text: {err} Tick “Drop unknown characters”.") from None
    while any(len(c.tokenizer.encode(text)) > analysis_tokens(c.model.cfg) for c in checkpoints):
        text = text[max(1, len(text) // 16):]
    if len(text) < 2:
        raise UserError("Nothing of the text is left that both models can read; type something else.")
    return text


def scored(checkpoint: Checkpoint, text: str):
    """(token nats [T-1], characters per predicted token [T-1], next-token probabilities [V], vocab labels)."""
    tok, model = checkpoint.tokenizer, checkpoint.model
    ids = tok.encode(text)
    with torch.inference_mode():
        last = torch.softmax(model(torch.tensor([ids]))[0][0, -1], -1).numpy()
    nats = prompt_token_losses(model, ids) if len(ids) > 1 else torch.zeros(0).numpy()
    return nats, chars_per_token(tok, ids)[1:], last, [tok.token_label(i) for i in range(model.cfg.vocab_size)]


def attention_pair(checkpoints: list, text: str, names: tuple):
    """-> A's and B's attention grids on the text side by side, a sentence on the head that differs most."""
    if any(is_large(c.model.cfg) for c in checkpoints):
        return None, ("Attention: one of the models has too many heads to draw every head's pattern side by side; "
                      "open it on the Attention tab, which shows an overview of its heads and one layer at a time.")
    ids = [c.tokenizer.encode(text) for c in checkpoints]
    pa, pb = (attention_patterns(c.model, i) for c, i in zip(checkpoints, ids))
    la, lb = (token_labels(c.tokenizer, i) for c, i in zip(checkpoints, ids))
    selected, note = most_different_head(pa, pb)
    return attention_pair_figure(pa, la, pb, lb, *names, selected=selected), note


def most_different_head(patterns_a, patterns_b):
    """-> ((layer, head) whose patterns differ most between A and B, or None), a sentence saying so."""
    if patterns_a.shape != patterns_b.shape:
        return None, attention_mismatch(patterns_a.shape, patterns_b.shape)
    diff = pattern_differences(patterns_a, patterns_b)  # [L, H]
    most, least = (tuple(int(i) for i in np.unravel_index(f(diff), diff.shape)) for f in (np.argmax, np.argmin))
    if diff[most] < 0.005:  # the grids show whole percents: smaller differences are invisible there
        return None, (f"Attention: A's and B's heads attend alike here (no head's weights differ by more than "
                      f"{diff[most]:.3f} on average).")
    return most, (f"Attention: head {head_label(*most)} (outlined) differs most between A and B: its weights "
                  f"differ by {diff[most]:.2f} on average (on a 0..1 scale); head {head_label(*least)} differs "
                  f"least ({diff[least]:.2f}).")


def attention_mismatch(shape_a: tuple, shape_b: tuple) -> str:
    (la, ha, ta, _), (lb, hb, tb, _) = shape_a, shape_b
    if (la, ha) == (lb, hb):
        return (f"Attention: both have {la} × {ha} heads, but A reads this text as {ta} tokens and B as {tb}, so "
                "their patterns cannot be compared weight by weight; compare their shapes by eye.")
    return (f"Attention: A has {model_shape(la, ha)} and B {lb} × {hb}, so their heads cannot be paired one to "
            "one; compare the grids by eye.")


def compare_view(session: Session, prompt, drop_unknown=False):
    """-> per-character bits figure, next-token figure, numbers (markdown), caption, attention grids side by side."""
    require_model(session)
    b = second_model(session)
    a_ckpt, b_ckpt = session.inspected.checkpoint, b.checkpoint
    text = readable_text(prompt, [a_ckpt, b_ckpt], bool(drop_unknown))
    (nats_a, chars_a, next_a, vocab_a), (nats_b, chars_b, next_b, vocab_b) = scored(a_ckpt, text), scored(b_ckpt, text)
    if chars_a.sum() == 0 or chars_b.sum() == 0:
        raise UserError("The text is a single token for one of the models: type a longer text.")
    bits_a, bits_b = character_bits(nats_a, chars_a), character_bits(nats_b, chars_b)
    n = min(len(bits_a), len(bits_b))  # both curves end at the text's end; the first token is never predicted
    chars = [f"{len(text) - n + i}:{visible(c)}" for i, c in enumerate(text[len(text) - n:])]
    # one number per model, the chart's: the mean over the n characters both predict (a BPE model's first token
    # covers characters it never predicts, so over its own characters it would score other ones than A)
    bpc = (float(bits_a[-n:].mean()), float(bits_b[-n:].mean()))
    names = (session.inspected.name, b.name)
    rows = [("A: " + names[0], a_ckpt, nats_a, bpc[0]), ("B: " + names[1], b_ckpt, nats_b, bpc[1])]
    table = ["| model | tokenizer | tokens | loss per token (nats) | bits per character (the last "
             f"{n:,} characters, which both predict) |", "|---|---|---:|---:|---:|"]
    table += [f"| {name} | {c.tokenizer.kind} | {len(nats) + 1} | {nats.mean():.3f} | {bits:.3f} |"
              for name, c, nats, bits in rows]
    grids, grid_note = attention_pair([a_ckpt, b_ckpt], text, names)
    return (character_bits_figure(bits_a[-n:], bits_b[-n:], chars, *names),
            next_token_pair_figure(next_a, vocab_a, next_b, vocab_b, *names),
            "\n".join(table),
            compare_caption(names, bpc, bits_b[-n:] - bits_a[-n:], chars,
                            a_ckpt.tokenizer.kind == b_ckpt.tokenizer.kind) + " " + grid_note,
            grids)
