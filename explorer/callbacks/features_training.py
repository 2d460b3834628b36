"""Features tab: train an SAE on the inspected model in the training child process, under the same training slots and
CPU shares as a model's run (explorer.state.training_run), watch its loss, L0, dead fraction and explained variance,
and read its features once it is evaluated: the trained SAE becomes the tab's SAE."""
import json
import shutil

import gradio as gr

from explorer.callbacks import validation
from explorer.callbacks.experiments import FALLBACK_CORPUS
from explorer.callbacks.features_source import LARGE_STATS_TOKENS, STATS_TOKENS
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.common.tempfiles import new_temp_dir
from explorer.figures.common import figure_to_json
from explorer.figures.features_training import PANELS, sae_training_figure
from explorer.state.inspected import ModelCaches, SAEChoice
from explorer.state.session import Session, require_model
from explorer.state.training_run import TrainingRun, cores, slots_text
from explorer.teaching.captions_features import sae_training_caption
from model_core.analysis.scale import is_large
from model_core.data.corpora import CORPORA
from model_core.features.activations import sae_hook_names
from model_core.features.app_run import SAERunConfig, sae_job
from model_core.features.budget import (
    DEFAULT_TOKENS,
    TOKEN_STEP,
    SAEBudget,
    SAEBudgetError,
    check_sae_run,
    minutes,
    tokens_that_fit,
)
from model_core.features.evaluation import EVAL_TOKENS
from model_core.features.saelens_format import save_sae
from model_core.features.texts import text_splits
from model_core.features.training import SAETrainConfig, default_dead_tokens
from model_core.training.run_protocol import Command

EXPANSION = 8  # features per dimension of the activation by default (the shipped SAE's 1,024 = 8 x 128)
DEFAULT_K = 32
MAX_EXPANSION = 64  # features at most this many times the activation's width
MAX_FEATURES = 32_768
MAX_TOKENS = 4_194_304
MAX_ACTIVATION_BYTES = 512_000_000  # the collected activations (float32) one run may keep
LARGE_EVAL_TOKENS = 4_096  # a pretrained model's evaluation: three passes of the whole model per token
CHART_POINTS = 400


def budget() -> SAEBudget:
    return SAEBudget(LIMITS.max_sae_minutes * 60, MAX_ACTIVATION_BYTES, cores())


def evaluation_reads(session: Session) -> tuple[int, int]:
    """(evaluation tokens, statistics tokens) for the inspected model."""
    large = is_large(session.inspected.config)
    return (LARGE_EVAL_TOKENS, LARGE_STATS_TOKENS) if large else (EVAL_TOKENS, STATS_TOKENS)


def default_hook(cfg) -> str:
    return f"blocks.{cfg.n_layers // 2}.hook_resid_post"


def sae_training_setup(session: Session) -> dict:
    """The training controls for the inspected model: its hook points, 8 x d_model features, k 32, and the
    shipped budget of tokens, or as many as fit this server's time (a large model's pass is slow)."""
    require_model(session)
    cfg, hook = session.inspected.config, default_hook(session.inspected.config)
    d_sae = EXPANSION * cfg.d_model
    tokens = tokens_that_fit(cfg, hook, d_sae, 1.0, *evaluation_reads(session), budget())
    note = (f"The shipped setting ({DEFAULT_TOKENS:,} tokens) fits this server's time limit."
            if tokens >= DEFAULT_TOKENS else
            f"A pass of this model is slow: {tokens:,} tokens fit this server's {minutes(budget().max_seconds)}."
            if tokens else "This model is too slow to train an SAE on here.")
    return {"hook": gr.update(choices=sae_hook_names(cfg), value=hook), "features": d_sae, "k": DEFAULT_K,
            "tokens": tokens or TOKEN_STEP, "note": note}


def _settings(session: Session, hook, features, k, tokens) -> SAERunConfig:
    cfg = session.inspected.config
    hook = validation.choice(hook or default_hook(cfg), "Hook point", sae_hook_names(cfg))
    width = cfg.d_mlp if hook.endswith("mlp.hook_post") else cfg.d_model
    d_sae = validation.whole_number(features, "Features", minimum=1, maximum=min(MAX_FEATURES, MAX_EXPANSION * width),
                                    default=EXPANSION * cfg.d_model)
    k = validation.whole_number(k, "k (active features per token)", minimum=1, maximum=d_sae, default=DEFAULT_K)
    tokens = validation.whole_number(tokens, "Tokens", minimum=TOKEN_STEP, maximum=MAX_TOKENS, default=DEFAULT_TOKENS)
    eval_tokens, stats_tokens = evaluation_reads(session)
    return SAERunConfig(hook, d_sae, k, tokens, min(cfg.block_size, 128), eval_tokens, stats_tokens, SAETrainConfig())


def training_text(session: Session):
    """(name, train ids, validation ids): the model's built-in corpus, else the Data tab's text when its tokenizer is
    the model's, else (a pretrained model) FALLBACK_CORPUS."""
    corpus, data = session.inspected.held.corpus, session.workspace.data
    if corpus not in CORPORA and data is not None and data.tokenizer.to_dict() == session.inspected.tokenizer.to_dict():
        return data.name, data.train, data.val
    if corpus not in CORPORA and not is_large(session.inspected.config):
        raise UserError("This model's training text is unknown (it was not trained on a built-in corpus): prepare "
                        "its text on the Data tab with the same tokenizer, then try again.")
    train, val, name = text_splits(session.inspected.tokenizer, corpus if corpus in CORPORA else FALLBACK_CORPUS)
    return name, train, val


def train_features(session: Session, hook: str = "", features=None, k=DEFAULT_K, tokens=DEFAULT_TOKENS) -> str:
    """Start training a TopK SAE with `features` features on `tokens` activations at `hook` of the inspected model,
    in a training slot; -> a status line. /train_features_status follows it and returns its evaluation."""
    require_model(session)
    if session.workspace.sae_run is not None and session.workspace.sae_run.active:
        raise UserError("An SAE is already training: stop it before starting another.")
    s = _settings(session, hook, features, k, tokens)
    try:
        seconds = check_sae_run(session.inspected.config, s.hook, s.d_sae, s.tokens, s.train.epochs, s.eval_tokens,
                                s.stats_tokens, budget())
    except SAEBudgetError as err:
        raise UserError(str(err)) from None
    name, train, val = training_text(session)
    if min(len(train), len(val)) < s.window:
        raise UserError(f"The text {name} is too short for windows of {s.window} tokens.")
    caches = session.inspected.caches  # the trained SAE goes with the model it was trained on
    # the weights are only read (copied for the child): a shipped model every session shares is not copied here
    job = sae_job(session.inspected.held.model, train, val, s, session.inspected.name, name)
    session.workspace.sae_run = TrainingRun(job, name, adopt=lambda run, final: _adopt(caches, run, final)).start()
    return (f"Training an SAE: {s.d_sae:,} features, k = {s.k}, {s.tokens:,} tokens of {name} at `{s.hook}` "
            f"(about {minutes(seconds)} on an idle server).")


def _adopt(caches: ModelCaches, run: TrainingRun, final: bool) -> bool:
    """The run ended with an evaluated SAE: it becomes the Features tab's SAE (in the caches of the model it was
    trained on, which are gone if the session inspects another model by then).
    -> whether it did: a paused SAE is not taken (its biases are still scaled for training)."""
    out = run.progress.outputs
    if not (final and "feature_stats" in out):
        return False
    sae = run.progress.model.requires_grad_(False)
    sae.cfg.extra["evaluation"] = {k: v for k, v in out["evaluation"].items() if k != "log_density_histogram"}
    caches.sae = SAEChoice(sae, out["feature_stats"], "trained here")
    return True


def features_training_control(session: Session, action: str) -> str:
    return control_run(session.workspace.sae_run, action, "No SAE is training")


def control_run(run, action: str, idle: str) -> str:
    """Pause, resume or stop a feature run (an SAE's, transcoders'); idle: the refusal when none is going."""
    if run is None or not run.active:
        raise UserError(f"{idle}: press Start first.")
    run.control(Command[action.upper()])
    return {"pause": "Pausing…", "resume": "Resumed.", "stop": "Stopping…"}[action]


def features_training_poll(session: Session) -> dict:
    """{status, chart (figure JSON), result, running}: what the training section shows."""
    run = session.workspace.sae_run
    if run is None:
        return {"status": f"No SAE training yet ({slots_text()}).", "chart": "", "caption": "", "result": "",
                "running": False}
    run.heartbeat()
    chart, caption = chart_json(run)
    return {"status": run_status(run), "chart": chart, "caption": caption, "result": _result(run.progress.outputs),
            "running": run.active}


def run_status(run: TrainingRun, what: str = "SAE", collected: str = "activations") -> str:
    """The status line of a feature run (an SAE's, or transcoders': `what`), collecting `collected` then training."""
    p = run.progress
    if p.error:
        whose = f"{what}'" if what.endswith("s") else f"{what}'s"
        return f"❌ The {whose} training stopped with an error: {p.error}"
    if run.expired:
        return f"**stopped** by the server because {run.expired}, to free its slot for others."
    if not p.history:
        if "collected" not in p.outputs:
            return f"**{p.state}** · starting the training process…"
        got = f"{p.outputs['collected']:,} of {p.cfg.tokens:,} tokens"
        if p.state == "stopped":
            return f"**stopped** while collecting {collected} ({got}): nothing was trained."
        return f"**{p.state}** · collecting {collected}: {got}."
    last, eta = p.history[-1], p.eta_seconds() if run.active else 0
    tail = f" · evaluating the {what} and reading its features…" if p.step >= p.cfg.max_steps and run.active else ""
    return (f"**{p.state}** · step **{p.step:,} / {p.cfg.max_steps:,}** · loss {last['loss']:.4f} · L0 "
            f"{last['l0']:.1f} · dead {last['dead_fraction']:.1%} · explained variance "
            f"{last['explained_variance']:.3f}" + (f" · ETA {eta:,.0f} s" if 0 < eta < float("inf") else "") + tail)


def chart_json(run: TrainingRun, points: int = CHART_POINTS) -> tuple[str, str]:
    """The live chart (figure JSON, at most `points` steps, the latest always among them) and its caption. A
    transcoder run (its history has a "layer") marks where each layer starts and its caption reads the layer
    trained last."""
    p = run.progress
    if not p.history:
        return "", ""
    rows = p.history[:: max(1, len(p.history) // points)]
    rows = rows if rows[-1] is p.history[-1] else [*rows, p.history[-1]]
    steps, series = [m["step"] for m in rows], {key: [m[key] for m in rows] for key in PANELS}
    layer = p.history[-1].get("layer")
    per_layer = getattr(p.cfg, "steps_per_layer", p.cfg.max_steps)
    width = getattr(p.cfg, "d_sae", None) or getattr(p.cfg, "d_transcoder", 0)
    window = p.cfg.train.dead_tokens or default_dead_tokens(width, p.cfg.k)
    starts = {} if layer is None else {n: n * per_layer for n in range(layer + 1)}
    title = "Training the SAE" if layer is None else "Training the transcoders (one layer after another)"
    figure = sae_training_figure(steps, series, p.cfg.max_steps, title, window, starts)
    start = starts.get(layer, 0)
    if layer is not None:  # the caption reads the layer trained last
        kept = [i for i, m in enumerate(rows) if m.get("layer") == layer]
        steps, series = [steps[i] for i in kept], {key: [v[i] for i in kept] for key, v in series.items()}
    seen = (p.history[-1]["step"] - start) * p.cfg.train.batch_size
    return (figure_to_json(figure),
            sae_training_caption(steps, series["loss"], series["l0"], series["dead_fraction"],
                                 series["explained_variance"], window, seen, layer, start))


def _result(outputs: dict) -> str:
    ev = outputs.get("evaluation")
    if ev is None:
        return ""
    return (f"**The SAE, evaluated on {ev['n_tokens']:,} validation tokens:** explained variance "
            f"**{ev['explained_variance']:.3f}**, CE loss recovered **{ev['ce_loss_recovered']:.3f}** (1 = the model "
            f"unchanged, 0 = the layer's output zeroed), L0 **{ev['l0']:.1f}**, dead **{ev['dead_fraction']:.1%}** "
            "(never fired on those tokens). It is now the tab's SAE: press **Show features**.")


def features_training_status(session: Session) -> tuple[str, str]:
    """(status line, the evaluation as JSON once the run has ended: explained_variance, ce_loss_recovered, l0,
    dead_fraction, ...; "" before)."""
    shown = features_training_poll(session)
    ev = session.workspace.sae_run.progress.outputs.get("evaluation") if session.workspace.sae_run is not None else None
    done = ev is not None and not shown["running"]
    return shown["status"], json.dumps({**ev, "state": session.workspace.sae_run.progress.state}) if done else ""


def sae_download(session: Session) -> str:
    """Path of a .zip of the tab's trained SAE in SAELens's layout (cfg.json, sae_weights.safetensors) with its
    feature statistics."""
    kept = session.inspected.caches.sae
    if kept is None or kept.source != "trained here":
        raise UserError("No SAE trained here for the inspected model yet: train one first.")
    folder = new_temp_dir()  # swept by age and removed at exit
    save_sae(kept.sae, folder / "sae")
    kept.stats.save(folder / "sae")
    return shutil.make_archive(str(folder / "sae"), "zip", folder / "sae")
