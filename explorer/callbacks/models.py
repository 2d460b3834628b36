"""Picking a shipped model, saving the inspected model as a .zip, loading an uploaded one."""
from dataclasses import replace
from pathlib import Path

import gradio as gr

from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.common.shipped_list import PRETRAINED, display_name
from explorer.common.tempfiles import new_temp_dir
from explorer.common.wording import model_shape
from explorer.state.session import Session, refuse_pretrained
from explorer.state.shipped import is_open
from model_core.analysis.scale import analysis_tokens
from model_core.checkpoints.checkpoint import CheckpointError, load_checkpoint_zip, save_checkpoint_zip
from model_core.checkpoints.load_limits import UPLOAD_LIMITS, LoadLimits


def model_summary(session: Session) -> str:
    """'Inspecting **name**: shape, ..., its last loss.' and, while this session's run trains, which model that is
    (the tabs show it only once the run pauses or ends)."""
    c = session.inspected.held  # read only: a shared shipped model is not copied for its summary
    cfg = c.model.cfg
    trained = _last_loss(c.evals or [])
    return (f"Inspecting **{display_name(session.inspected.name)}**: {model_shape(cfg.n_layers, cfg.n_heads)}, d_model "
            f"{cfg.d_model}, context {cfg.block_size}, vocabulary {cfg.vocab_size}, "
            f"{c.model.num_params():,} parameters{trained}.{read_note(c.model)}{training_note(session)}")


def read_note(model) -> str:
    """What a model read from its own forward pass (transformer_explorer.show on a learner's class) shows."""
    if not getattr(model, "reads_whole_window", False):
        return ""
    return (f" Read from {model.layout.kind}'s own forward pass: the Attention, Residual stream, Embeddings and "
            "Sampling tabs show it; the tabs that need its weights by name say so.")


def training_note(session: Session) -> str:
    """' Training now: **task: induction**: the other tabs show that model once you pause the run or it ends.' while
    the session's run trains (the model inspected is another, or the run's state at its last pause); '' otherwise.
    Without it the header named the previous run's model as if it were the one training. No step count: the header
    is polled every second while a run trains, and a header that changed at each poll set off every listener of its
    change (the task prompt's check) each second; the status line gives the step."""
    run = session.workspace.run
    if run is None or not run.active or run.progress.requested != "running":
        return ""
    return f" Training now: **{run.corpus}**: the other tabs show that model once you pause the run or it ends."


def _last_loss(evals: list[dict]) -> str:
    """', val loss 1.234 (its training's evaluation at step 1,200)' from the last evaluation (', loss on the training
    text ...' without a validation split; ', test loss ... (test accuracy 3%)' for a task, whose test examples a
    memorising model can get confidently wrong, far above guessing), or '' for an untrained model. The step and
    'training' say where the number comes from: the Experiments tab measures validation loss again, on its own
    fixed windows. Every loss is the mean over the scored tokens, in nats."""
    for e in reversed(evals):
        at = f" (its training's evaluation at step {int(e.get('step', 0)):,})"
        if e.get("val_loss") is not None and e.get("val_acc") is not None:
            return (f", test loss {e['val_loss']:.3f} on examples never trained on (test accuracy "
                    f"{e['val_acc']:.0%}){at}")
        if e.get("val_loss") is not None:
            return f", val loss {e['val_loss']:.3f}{at}"
        if e.get("train_loss") is not None:
            return f", loss on the training text {e['train_loss']:.3f}{at[:-1]}; no validation split)"
    return ""


def slider_maxima(session: Session) -> dict[str, int]:
    """Largest valid value per slider kind for the inspected model."""
    cfg = session.inspected.config
    return {"layer": cfg.n_layers - 1, "hidden": cfg.n_layers, "head": cfg.n_heads - 1,
            "query": analysis_tokens(cfg) - 1}  # a large model's analysis reads at most 256 tokens


def opening_note(session: Session, name) -> gr.Markdown:
    """The note shown while a pretrained model opens for the first time on this server (8-23 s measured on 2
    loaded cores, docs/lessons.md), hidden otherwise: Gradio's timers alone say nothing about the wait."""
    note = opening_note_text(session, name)
    return gr.Markdown(note, visible=bool(note))


def opening_note_text(session: Session, name) -> str:
    """opening_note's sentence for model name ('' when it opens at once: not pretrained, open already)."""
    entry = PRETRAINED.get(name) if isinstance(name, str) else None
    if entry is None or is_open(name) or session.inspected.shared_key == f"shipped:{name}":
        return ""
    return (f"**Opening {entry.short_title}** ({entry.millions} million parameters, read from its 4-bit file): "
            "about 10 s the first time on this server, up to half a minute while a class is busy; afterwards it "
            "opens at once.")


def pick_shipped(session: Session, name: str) -> str:
    if not name:
        raise UserError("Pick one of the shipped models first.")
    session.inspected.use_shipped(name)
    return model_summary(session)


def save_zip(session: Session) -> str:
    """Path of a .zip holding the inspected model (config, weights, tokenizer, history). Not for a pretrained
    model: 540 MB per click on the server's disk, for weights every user already has in the app."""
    refuse_pretrained(session.inspected.held, "Saving it as a .zip")
    slug = "".join(ch if ch.isalnum() else "-" for ch in session.inspected.name)[:40].strip("-") or "model"
    path = new_temp_dir() / f"{slug}.zip"  # swept by age and removed at exit
    save_checkpoint_zip(session.inspected.checkpoint, path)
    return str(path)


def upload_limits() -> LoadLimits:
    """Caps for an uploaded checkpoint from this server's flags: no model larger than one a user may train here.

    The zip may unpack to the weights of the largest such model (4 bytes a parameter) plus as much JSON as
    an upload may hold; its tokenizer, history and snapshots may keep as much memory as a session's training
    data; the size caps (block, vocabulary, layers, heads, width) are UPLOAD_LIMITS'."""
    return replace(UPLOAD_LIMITS, max_params=LIMITS.max_params,
                   max_bytes=LIMITS.max_upload_bytes + 4 * LIMITS.max_params,
                   max_json_bytes=min(UPLOAD_LIMITS.max_json_bytes, LIMITS.max_upload_bytes),
                   max_record_bytes=int(LIMITS.session_data_mb * 1e6))


def load_zip(session: Session, upload) -> str:
    """Inspect an uploaded checkpoint; the session keeps its model unless the upload validates in full."""
    if not upload:
        raise UserError("Choose a .zip checkpoint to upload first.")
    p = Path(upload)
    if not p.is_file():
        raise UserError(f"The uploaded file {p.name} is gone from the server: upload it again.")
    if p.stat().st_size > LIMITS.max_upload_bytes:
        raise UserError(f"{p.name} is {p.stat().st_size / 1e6:.1f} MB; the limit is {LIMITS.max_upload_mb:g} MB.")
    try:
        ckpt = load_checkpoint_zip(p, upload_limits())
    except CheckpointError as err:  # name the file as the user knows it, not the server's temp path
        raise UserError(str(err).replace(str(p), p.name)) from None
    session.inspected.use(ckpt, f"uploaded {p.name}")  # last: only a fully validated checkpoint replaces the model
    return model_summary(session)
