"""Scrub through the snapshots recorded while the inspected model trained: watch the heads form."""
import gradio as gr

from explorer.callbacks import validation
from explorer.common.errors import UserError
from explorer.figures.attention import attention_grid_figure
from explorer.state.session import Session


def snapshot_view(session: Session, progress):
    """progress 0..1 of the training run -> (attention grid at the nearest snapshot, caption)."""
    snaps = session.inspected.checkpoint.snapshots or []
    if not snaps:
        raise UserError("This model has no training snapshots: train one on the Train tab (or pick a shipped "
                        "model) to watch its heads form.")
    progress = validation.number(progress, "Training progress", minimum=0, maximum=1, default=1)
    i = round(progress * (len(snaps) - 1))
    snap = snaps[i]
    labels = [session.inspected.tokenizer.token_label(t) for t in snap.probe_ids]
    losses = []
    if snap.train_loss is not None:
        losses.append(f"train loss {snap.train_loss:.2f}")
    if snap.val_loss is not None:
        losses.append(f"validation loss {snap.val_loss:.2f}")
    caption = (f"Step **{snap.step:,}** (snapshot {i + 1} of {len(snaps)})"
               + (f": {', '.join(losses)}." if losses else ".")
               + " Slide to the right to see the diagonal and previous-token stripes appear.")
    return attention_grid_figure(snap.pattern(), labels), caption


def snapshot_when_opened(session: Session, progress):
    """The accordion opened: snapshot_view at the slider's point; for a model with no snapshots its sentence as the
    caption (the student only opened a box: no toast)."""
    try:
        return snapshot_view(session, progress)
    except UserError as err:
        return gr.skip(), str(err)
