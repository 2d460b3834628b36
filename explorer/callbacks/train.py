"""Train tab: build a model from the controls, train it in a child process (explorer.state.training_run), read its
progress."""
import functools
from typing import Optional

import gradio as gr
import torch

from explorer.callbacks.data import choices_vocab_size, choose_data
from explorer.callbacks.model_size import check_model_size, count_params, size_text  # noqa: F401  (count_params: used by ui/tests)
from explorer.callbacks.task_data import task_training
from explorer.callbacks.train_comparison import kept_run
from explorer.callbacks.train_fields import checked_field
from explorer.common.controls import ARCH_FIELDS, DEFAULT_VAL_SPLIT, LIVE_CAPTION, OPTIM_FIELDS, d_mlp_for
from explorer.common.errors import UserError, apology, user_sentence
from explorer.common.limits import LIMITS
from explorer.figures.attention import live_attention_figure
from explorer.figures.common import figure_to_json
from explorer.figures.progress import progress_figure, progress_series
from explorer.figures.training import loss_figure
from explorer.state.session import Session
from explorer.state.training_run import TrainingRun, slots_text
from explorer.state.workspace import PreviousRun, StatusNote, Workspace
from explorer.teaching import captions, captions_progress
from explorer.teaching.captions_training import loss_caption
from model_core import GPT, GPTConfig
from model_core.analysis.heads import head_statistics
from model_core.data.dataset import val_or_none
from model_core.training.run_protocol import Command, RunProgress, TrainJob
from model_core.training.train_config import TrainConfig
from model_core.training.trainer import next_evaluation

LOSS_POINTS = 400  # the live chart shows at most this many per-step points
NO_VAL_NOTE = " (no validation split: evaluated on the training text)"


def _number(name, value):
    return checked_field(name, value)  # numbers checked with a readable message; choices pass through


def model_config(session: Session, arch: dict, vocab_size: int | None = None) -> GPTConfig:
    """The model the Train tab's controls describe (ARCH_FIELDS -> values); the FFN width comes as a ratio.
    The vocabulary is the prepared text's (or the inspected model's) unless vocab_size says otherwise."""
    if vocab_size is None:
        data = session.workspace.data
        vocab_size = (data.tokenizer if data else session.inspected.tokenizer).vocab_size
    fields = {k: _number(k, v) for k, v in arch.items()}
    if "mlp_ratio" in fields:
        fields["d_mlp"] = d_mlp_for(fields.pop("mlp_ratio"), fields["d_model"])
    return GPTConfig(vocab_size=vocab_size, **fields)


def train_config(session: Session, optim: dict) -> TrainConfig:
    """The run the Train tab's optimiser controls (OPTIM_FIELDS -> values) describe on the prepared data (a task
    trains on the full batch)."""
    settings = {k: _number(k, v) for k, v in optim.items()}
    settings |= task_training(session.workspace.data, settings["batch_size"], eval_iters=10)
    tc = TrainConfig(**{"eval_iters": 10, **settings},
                     snapshot_interval=max(25, _number("eval_interval", optim["eval_interval"])), device="cpu")
    if tc.max_steps > LIMITS.max_steps:
        raise UserError(f"{tc.max_steps:,} steps is more than this server allows ({LIMITS.max_steps:,}).")
    return tc


DEFAULT_CORPUS = "shakespeare"  # what Start prepares when the Data tab names no corpus


def start_vocab_size(session: Session, corpus, kind, bpe_vocab) -> int:
    """The vocabulary Start would train with (prepare_controls_data): an uploaded text's, else the Data tab's
    choices', whatever text was prepared before or model is inspected."""
    data = session.workspace.data
    if data is not None and data.uploaded:
        return data.tokenizer.vocab_size
    return choices_vocab_size(corpus or DEFAULT_CORPUS, kind, bpe_vocab)


def param_count_view(session: Session, corpus: str, kind: str, bpe_vocab, *arch_values) -> str:
    """Parameter count of the model Start would build from the controls, or what is wrong with them."""
    try:
        vocab_size = start_vocab_size(session, corpus, kind, bpe_vocab)
        cfg = model_config(session, dict(zip(ARCH_FIELDS, arch_values)), vocab_size)
    except ValueError as err:  # a UserError too
        return f"⚠️ {err}"
    return size_text(cfg)


def newest_param_count(session: Session, sent_at, corpus: str, kind: str, bpe_vocab, *arch_values) -> Optional[str]:
    """param_count_view for a count the page stamped sent_at (its clock at sending), or None for one sent before a
    count already answered: a lesson step or a link sets many controls at once, each change sends a count, and some
    went before every value had landed (Gradio updates outputs one at a time); the one that finished last showed
    the grokking model with the previous FFN width (147,772 parameters, d_mlp 256, beside "FFN width 4")."""
    if sent_at is not None:
        if sent_at <= session.workspace.counted_at:
            return None
        session.workspace.counted_at = sent_at
    return param_count_view(session, corpus, kind, bpe_vocab, *arch_values)


def prepare_controls_data(session: Session, corpus: str, kind: str, bpe_vocab, val_split) -> None:
    """The data the Data-tab controls show now (an uploaded text stays until the user chooses again)."""
    if session.workspace.data is None or not session.workspace.data.uploaded:
        choose_data(session, corpus or DEFAULT_CORPUS, None, kind or "char", bpe_vocab, val_split)


def noted(action):
    """A Train-tab action whose refusal or failure is noted for the status line (poll shows it first) until the next
    action, or, when a run was going, until that run ends; the error still reaches the caller (the page's toast,
    the API's error)."""

    @functools.wraps(action)
    def noting(session: Session, *args):
        ws = session.workspace
        ws.note = None
        try:
            return action(session, *args)
        except Exception as err:  # noqa: BLE001 - noted, then raised on
            sentence = user_sentence(err)
            ws.note = StatusNote(sentence or apology(action.__name__), ws.going_run)
            if sentence is None:  # logged now, under the reference the note quotes
                raise gr.Error(ws.note.text, print_exception=False) from None
            raise
    return noting


def going_refusal(run: TrainingRun) -> str:
    """Why Start starts nothing while run goes, and what to do."""
    p = run.progress
    if p.requested == "stopped":
        return "The run you stopped is still finishing its last step: press **Start** again in a moment."
    return (f"A run is already going ({'paused' if p.requested == 'paused' else 'training'} at step {p.step:,} of "
            f"{p.cfg.max_steps:,}), so Start started nothing. To start a new run, press **Stop**, then **Start** "
            "again: the stopped run's curves stay on the charts, faded, beside the new run's.")


@noted
def start_training(session: Session, corpus: str, kind: str, bpe_vocab, *values) -> str:
    """Build the model from the controls and start its run. values: the
    ARCH_FIELDS, the OPTIM_FIELDS, then (optionally) the validation split choice."""
    if session.workspace.going_run is not None:
        raise UserError(going_refusal(session.workspace.going_run))
    n_fixed = len(ARCH_FIELDS) + len(OPTIM_FIELDS)
    prepare_controls_data(session, corpus, kind, bpe_vocab, (values[n_fixed:] or (DEFAULT_VAL_SPLIT,))[0])
    arch, optim = dict(zip(ARCH_FIELDS, values)), dict(zip(OPTIM_FIELDS, values[len(ARCH_FIELDS):]))
    cfg, tc = model_config(session, arch), train_config(session, optim)
    check_model_size(count_params(cfg), tc.batch_size, cfg.block_size, tc.max_steps)
    torch.manual_seed(tc.seed)
    model = GPT(cfg)
    ws, d = session.workspace, session.workspace.data
    job = TrainJob(model, d.train, val_or_none(d.val), tc, d.tokenizer)
    run = TrainingRun(job, d.name, sample_every=max(50, tc.eval_interval),
                      adopt=session.inspected.adopter()).start()
    ws.previous, ws.run = kept_run(ws.run, cfg, tc, d.name), run  # one previous run at most: this one replaces it
    where = "" if len(d.val) else " (no validation split: losses are measured on the training text)"
    return f"Training started: {model.num_params():,} parameters on {d.name}, {tc.max_steps:,} steps{where}."


@noted
def control(session: Session, action: str) -> str:
    run = session.workspace.run
    if run is None:
        raise UserError("No training run yet: press Start first.")
    if not run.active:  # a second Stop, or Pause after the last step
        raise UserError(f"This run has ended already (at step {run.progress.step}): press Start for a new one.")
    if action == "pause":  # "the model on the other tabs becomes this one", whatever they inspect now
        run.adopt.consent()
    run.control(Command[action.upper()])
    return {"pause": "Pausing… the model on the other tabs becomes this one at its current step.",
            "resume": "Resumed.", "stop": "Stopping after the current step…"}[action]


def poll(session: Session) -> dict:
    """-> {loss, status, live, live_caption, sample, progress, progress_note: what the Train tab shows (figures as
    JSON), running: whether the run goes on (the page polls while it does)}. Reads the run only: the session adopts
    the trained model when the run's child confirms a pause or the end (TrainingRun.adopt)."""
    ws = session.workspace
    run = ws.run
    if run is None:
        return {"loss": "", "status": note_text(ws) + "No training run yet: set the controls and press **Start** "
                f"({slots_text()}).", "live": "", "live_caption": LIVE_CAPTION, "sample": "", "progress": "",
                "progress_note": "", "running": False}
    run.heartbeat()
    p = run.progress
    live, live_caption = live_attention(run)
    progress, progress_note = progress_json(p.evals, p.step, ws.previous)
    return {"loss": loss_json(p.history, p.evals, p.has_val, p.step, ws.previous), "status": run_status(session),
            "live": live, "live_caption": live_caption, "sample": sample_text(run), "progress": progress,
            "progress_note": progress_note, "running": run.active}


def run_status(session: Session) -> str:
    """The status line of the session's run: a refusal noted first, what the faded curves are last."""
    ws = session.workspace
    p = ws.run.progress
    status = note_text(ws) + status_text(ws.run, p.history[-1] if p.history else {})
    if p.error:
        status += f" The other tabs still inspect **{session.inspected.name}**."
    elif not ws.run.active and ws.run.adopted != p.step:
        status += (f" The other tabs still inspect **{session.inspected.name}**, opened while this run trained: "
                   "its model was not put in its place.")
    if ws.run.expired:
        status += f" The server stopped this run because {ws.run.expired}, to free its slot for others."
    if ws.previous is not None:
        status += f" Faded on the charts, for comparison: the {ws.previous.label}."
    return status


def note_text(ws: Workspace) -> str:
    """The last action's refusal as the status line's first paragraph, while it holds ('' when none)."""
    return f"⚠️ {ws.note.text}\n\n" if ws.note is not None and ws.note.shown else ""


def progress_json(evals: list[dict], step: int, previous: PreviousRun = None) -> tuple[str, str]:
    """The progress measures chart as figure JSON (same step axis as the loss chart, the previous run's measures
    faded) and its caption."""
    steps, series = progress_series(evals)
    earlier = previous_measures(previous)
    if not series and earlier is None:
        return "", "Progress measures appear here at each evaluation."
    fig = progress_figure(steps, series, max_step=axis_end(step, previous), previous=earlier)
    caption = captions_progress.progress_caption(steps, series, step) if series else \
        "This run's progress measures appear here at each evaluation, beside the previous run's (faded)."
    return figure_to_json(fig.update_layout(uirevision="progress")), caption


def previous_measures(previous: PreviousRun = None) -> tuple | None:
    """progress_figure's previous: (legend label, steps, series), or None when that run measured nothing."""
    if previous is None:
        return None
    steps, series = progress_series(previous.evals)
    return (previous.label, steps, series) if series else None


def axis_end(step: int, previous: PreviousRun = None) -> int:
    """Where the charts' shared step axis ends: this run's step, or the previous run's last if that is later."""
    return max(step, previous.last_step if previous is not None else 0)


def sample_text(run: TrainingRun) -> str:
    """The newest sample under the step it was generated at (a fresh one comes with each evaluation)."""
    if not run.progress.samples:
        return ""
    step, text = run.progress.samples[-1]
    return f"step {step:,}{' (untrained)' if step == 0 else ''}:\n{text}"


def live_attention(run: TrainingRun) -> tuple[str, str]:
    """The newest snapshot's live attention figure JSON and its caption, built once per snapshot (polls come
    every second, snapshots every few seconds, and the poller shares the CPU with the training process)."""
    snapshots = run.progress.snapshots
    if snapshots and run.live_figure[0] != snapshots[-1].step:
        snap = snapshots[-1]
        labels = [run.progress.tokenizer.token_label(i) for i in snap.probe_ids]
        pattern = snap.pattern()  # [layer, head, query, key]
        caption = f"Step {snap.step:,} on the probe text. " + captions.grid_caption(head_statistics(pattern))
        run.live_figure = (snap.step, figure_to_json(live_attention_figure(pattern, labels)), caption)
    return run.live_figure[1:]


def status_text(run: TrainingRun, last: dict) -> str:
    p = run.progress
    if p.error:
        return f"❌ Training stopped with an error at step {p.step:,}: {p.error}"
    step, total = p.step, p.cfg.max_steps
    tps = sum(m["tokens_per_sec"] for m in p.history[-20:]) / max(1, len(p.history[-20:]))
    eta = p.eta_seconds() if run.active else 0
    eta_text = f" · ETA {eta:,.0f} s" if 0 < eta < float("inf") else ""
    loss = f" · batch loss {last['loss']:.3f}" if last else ""
    return (f"**{p.state}** · step **{step:,} / {total:,}**{loss}{evaluated_text(p)} · {tps:,.0f} tokens/s"
            + eta_text + ". " + loss_sentence(p) + next_evaluation_text(run))


def evaluated_text(t: RunProgress) -> str:
    """' · val loss **2.351** (step 100)': the latest evaluation, with its step when training has moved on."""
    if not t.evals:
        return ""
    latest = t.evals[-1]
    at = f" (step {latest['step']:,})" if latest["step"] != t.step else ""
    if not t.has_val:
        return f" · loss on the training text **{latest['train_loss']:.3f}**{at}{NO_VAL_NOTE}"
    return f" · val loss **{latest['val_loss']:.3f}**{at}" if latest.get("val_loss") is not None else ""


def next_evaluation_text(run: TrainingRun) -> str:
    """' Next evaluation at step 25.' while the run goes on and one is due before its end."""
    t = run.progress
    upcoming = next_evaluation(t.step, t.cfg.eval_interval)
    if not run.active or upcoming is None or upcoming >= t.cfg.max_steps:
        return ""
    return f" Next evaluation (and sample, and attention) at step {upcoming:,}."


def loss_sentence(t: RunProgress) -> str:
    if not t.history and not t.evals:
        return ""
    steps, losses = [m["step"] for m in t.history], [m["loss"] for m in t.history]
    if not t.has_val:  # the chart's bold curve is the training text's, evaluated: the caption follows it
        ev = [e for e in t.evals if e.get("train_loss") is not None]
        return loss_caption(steps, losses, [e["step"] for e in ev], [e["train_loss"] for e in ev] or None, None,
                            t.model.cfg.vocab_size, evaluated="Loss on the training text")
    ev = [e for e in t.evals if e.get("val_loss") is not None]
    return loss_caption(steps, losses, [e["step"] for e in ev], [e["val_loss"] for e in ev] or None,
                        [e["train_loss"] for e in ev] or None, t.model.cfg.vocab_size)


def evaluated_losses(evals: list[dict], has_val: bool) -> tuple[list, list | None, list]:
    """(evaluation steps, validation losses or None without a validation split, train losses)."""
    ev = [e for e in evals if e.get("val_loss") is not None or not has_val]
    return [e["step"] for e in ev], [e["val_loss"] for e in ev] if has_val else None, [e["train_loss"] for e in ev]


def loss_json(history: list[dict], evals: list[dict], has_val: bool = True, step: int = 0,
              previous: PreviousRun = None) -> str:
    """The loss chart as figure JSON for the live Plotly.react view; per-step losses thinned to LOSS_POINTS, the
    previous run's evaluated losses faded. has_val False: no validation split, so the evaluated curve is the
    training text's and the title says so."""
    if not history and not evals and previous is None:
        return ""
    thinned = history[:: max(1, len(history) // LOSS_POINTS)]
    earlier = (previous.label, *evaluated_losses(previous.evals, previous.has_val)) if previous else None
    fig = loss_figure([m["step"] for m in thinned], [m["loss"] for m in thinned], *evaluated_losses(evals, has_val),
                      previous=earlier)
    if not has_val:
        fig.update_layout(title_text="Training loss" + NO_VAL_NOTE)
    fig.update_layout(uirevision="loss", height=340)  # uirevision: zoom survives every redraw
    if axis_end(step, previous):  # the progress chart below uses the same step axis
        fig.update_xaxes(range=[0, axis_end(step, previous)])
    return figure_to_json(fig)
