"""Graph tab: train transcoders for the inspected model in the training child process, under the same training slots,
budget and live chart as an SAE run (explorer.callbacks.features_training): every layer's FFN inputs and outputs are
collected in one pass, the layers train one after another, the set is evaluated and its features read; it then
becomes the model's transcoders for the tab's graphs. Download writes it in circuit-tracer's format."""
import json
import shutil
import uuid

from explorer.callbacks import validation
from explorer.callbacks.features_training import (
    CHART_POINTS,
    budget,
    chart_json,
    control_run,
    evaluation_reads,
    run_status,
    training_text,
)
from explorer.callbacks.graph_source import Transcoders
from explorer.common.errors import UserError
from explorer.common.tempfiles import new_temp_dir
from explorer.state.inspected import Inspected, ModelCaches
from explorer.state.session import Session, require_model
from explorer.state.training_run import TrainingRun, slots_text
from model_core.analysis.replacement import ReplacementError, check_model
from model_core.features.budget import TOKEN_STEP, minutes
from model_core.features.transcoder_format import save_transcoders, stats_file
from model_core.features.transcoder_run import TranscoderRunConfig, transcoder_job, transcoder_run_seconds

EXPANSION, DEFAULT_K, DEFAULT_TOKENS, MAX_FEATURES, MAX_TOKENS = 8, 32, 262_144, 8_192, 1_048_576
MAX_PAIR_BYTES = 1_024_000_000  # the collected pairs of every layer (float32) one run may keep


def _settings(session: Session, features, k, tokens) -> TranscoderRunConfig:
    cfg = session.inspected.config
    try:
        check_model(cfg)
    except ReplacementError as err:
        raise UserError(str(err)) from None
    d_tc = validation.whole_number(features, "Features per layer", minimum=1, maximum=min(MAX_FEATURES, 64 * cfg.d_model),
                                   default=EXPANSION * cfg.d_model)
    k = validation.whole_number(k, "k (active features per token)", minimum=1, maximum=d_tc, default=DEFAULT_K)
    tokens = validation.whole_number(tokens, "Tokens", minimum=TOKEN_STEP, maximum=MAX_TOKENS, default=DEFAULT_TOKENS)
    eval_tokens, stats_tokens = evaluation_reads(session)
    return TranscoderRunConfig(cfg.n_layers, d_tc, k, tokens, min(cfg.block_size, 128), eval_tokens, stats_tokens)


def transcoders_training_setup(session: Session) -> dict:
    """The training controls for the inspected model: 8 x d_model features, k 32, and the default tokens, or as many
    as fit this server's time and memory (a large model's pass is slow)."""
    require_model(session)
    cfg = session.inspected.config
    d_tc = min(MAX_FEATURES, EXPANSION * cfg.d_model)
    eval_tokens, stats_tokens = evaluation_reads(session)

    def fits(tokens: int) -> bool:
        s = TranscoderRunConfig(cfg.n_layers, d_tc, DEFAULT_K, tokens, min(cfg.block_size, 128), eval_tokens,
                                stats_tokens)
        return (transcoder_run_seconds(cfg, s, budget().threads) <= budget().max_seconds
                and tokens * cfg.n_layers * 2 * cfg.d_model * 4 <= MAX_PAIR_BYTES)
    tokens = DEFAULT_TOKENS
    while tokens > TOKEN_STEP and not fits(tokens):
        tokens = max(TOKEN_STEP, tokens // 2 // TOKEN_STEP * TOKEN_STEP)
    return {"features": d_tc, "k": DEFAULT_K, "tokens": tokens}


def _check_budget(session: Session, s: TranscoderRunConfig) -> float:
    cfg, limit = session.inspected.config, budget()
    seconds = transcoder_run_seconds(cfg, s, limit.threads)
    if seconds > limit.max_seconds:
        raise UserError(f"These transcoders would take about {minutes(seconds)} on this server's {limit.threads} "
                        f"cores; runs here may take {minutes(limit.max_seconds)}: collect fewer tokens or use fewer "
                        "features.")
    size = s.tokens * cfg.n_layers * 2 * cfg.d_model * 4
    if size > MAX_PAIR_BYTES:
        raise UserError(f"{s.tokens:,} tokens of every layer's FFN input and output would take {size / 1e6:,.0f} MB; "
                        f"this server allows {MAX_PAIR_BYTES / 1e6:,.0f} MB: collect fewer tokens.")
    return seconds


def train_transcoders(session: Session, features=None, k=DEFAULT_K, tokens=DEFAULT_TOKENS) -> str:
    """Start training one TopK transcoder per layer (`features` features, `tokens` pairs each) for the inspected model
    in a training slot; -> a status line. /train_transcoders_status follows it."""
    require_model(session)
    if session.workspace.transcoder_run is not None and session.workspace.transcoder_run.active:
        raise UserError("Transcoders are already training: stop them before starting again.")
    s = _settings(session, features, k, tokens)
    seconds = _check_budget(session, s)
    name, train, val = training_text(session)
    if min(len(train), len(val)) < s.window:
        raise UserError(f"The text {name} is too short for windows of {s.window} tokens.")
    inspected = session.inspected  # the set goes with the model it was trained on (its caches, gone with it)
    job = transcoder_job(inspected.held.model, train, val, s, inspected.name, name)
    session.workspace.transcoder_run = TrainingRun(job, name, adopt=lambda run, final: _adopt(
        inspected, inspected.caches, run, final)).start()
    return (f"Training transcoders: {s.n_layers} layers × {s.d_transcoder:,} features, k = {s.k}, {s.tokens:,} tokens "
            f"of {name} (about {minutes(seconds)} on an idle server).")


def _adopt(inspected: Inspected, caches: ModelCaches, run: TrainingRun, final: bool) -> bool:
    """The run ended with an evaluated set: it becomes the model's transcoders for the Graph tab (if the session
    still inspects that model), and the session's results stop being shared with sessions of the same shipped
    model, whose graphs read other transcoders."""
    out = run.progress.outputs
    if not (final and "feature_stats" in out) or inspected.caches is not caches:
        return False
    transcoders = [tc.requires_grad_(False).eval() for tc in run.progress.model]
    for tc in transcoders:
        tc.cfg.extra["evaluation"] = out["evaluation"]
    with inspected.lock:
        caches.transcoders = Transcoders(transcoders, out["feature_stats"], f"trained:{uuid.uuid4().hex}")
        inspected.shared_key = None
    return True


def transcoders_training_control(session: Session, action: str) -> str:
    return control_run(session.workspace.transcoder_run, action, "No transcoders are training")


def transcoders_training_poll(session: Session) -> dict:
    """{status, chart (figure JSON), caption, result, running}: what the training section shows."""
    run = session.workspace.transcoder_run
    if run is None:
        return {"status": f"No transcoders training yet ({slots_text()}).", "chart": "", "caption": "", "result": "",
                "running": False}
    run.heartbeat()
    chart, caption = chart_json(run, CHART_POINTS)
    layer = run.progress.history[-1].get("layer") if run.progress.history else None
    status = run_status(run, "transcoders", "FFN inputs and outputs")
    if layer is not None and run.active:
        status += f" · layer {layer + 1} of {run.progress.cfg.n_layers}"
    return {"status": status, "chart": chart, "caption": caption, "result": _result(run.progress.outputs),
            "running": run.active}


def _result(outputs: dict) -> str:
    ev = outputs.get("evaluation")
    if ev is None:
        return ""
    layers = ", ".join(f"{v:.3f}" for v in ev["explained_variance"])
    return (f"**The transcoders, evaluated on {ev['n_tokens']:,} validation tokens:** explained variance of each "
            f"FFN's output {layers}; with every FFN replaced the loss is **{ev['ce_loss_replaced']:.3f}** nats against "
            f"the model's {ev['ce_loss_clean']:.3f} (**{ev['loss_gap']:+.3f}**). They are now this model's "
            "transcoders: press **Trace**.")


def transcoders_training_status(session: Session) -> tuple[str, str]:
    """(status line, the evaluation as JSON once the run has ended; "" before)."""
    shown = transcoders_training_poll(session)
    run = session.workspace.transcoder_run
    ev = run.progress.outputs.get("evaluation") if run is not None else None
    done = ev is not None and not shown["running"]
    return shown["status"], json.dumps({**ev, "state": run.progress.state}) if done else ""


def transcoders_download(session: Session) -> str:
    """Path of a .zip of the transcoders trained here, in circuit-tracer's layout, with their feature statistics."""
    kept = session.inspected.caches.transcoders
    if kept is None:
        raise UserError("No transcoders trained here for the inspected model yet: train them first.")
    folder = new_temp_dir() / "transcoders"
    extra = {"model_name": session.inspected.name, "evaluation": kept.transcoders[0].cfg.extra.get("evaluation")}
    save_transcoders(kept.transcoders, folder, scan=f"transformer-explorer/{session.inspected.name}", extra=extra)
    for layer, stats in enumerate(kept.stats):
        stats.save(folder, stats_file(layer))
    return shutil.make_archive(str(folder), "zip", folder)
