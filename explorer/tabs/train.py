"""Train tab: a preset, the model's shape and the optimiser, Start/Pause/Stop, live loss and attention, models."""
from dataclasses import dataclass

import gradio as gr

from explorer.common.controls import ARCH_FIELDS, CONTROL_NAMES, LIVE_CAPTION, OPTIM_FIELDS, mlp_ratio_of
from explorer.common.shipped_list import model_choices, shipped_models
from explorer.tabs.binding import bind
from explorer.tabs.common import API
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.live_plot import live_plot
from explorer.tabs.opening_note import announced, hidden_after
from explorer.tabs.raw_inputs import RawDropdown, RawFile, RawNumber, RawSlider
from explorer.teaching.view_params import register_control
from model_core.data.tasks.choices import CHOICES, FULL_BATCH_TASKS
from model_core.model.config import ACTIVATIONS, INITS, POSITIONALS
from model_core.training.presets import DEFAULT_PRESET, PRESETS, get_preset
from model_core.training.train_config import MAX_NS_STEPS, OPTIMIZERS

use_untrained_model = callbacks("init_model", "use_untrained_model")
apply_preset, preset_note = callbacks("presets", "apply_preset", "preset_note")
control, newest_param_count, poll, start_training = callbacks("train", "control", "newest_param_count", "poll",
                                                             "start_training")
model_summary, opening_note, pick_shipped, save_zip, load_zip = callbacks(
    "models", "model_summary", "opening_note", "pick_shipped", "save_zip", "load_zip")

CLASSROOM = get_preset("classroom")
DATA_FIELDS = ("corpus", "kind", "bpe_vocab")  # the Data tab's choices, named as in /data
MUON_FIELDS = ("muon_lr", "muon_ns_steps")  # shown only while the optimiser is Muon
ADVANCED_OPTIM = {"warmup_steps", "weight_decay", "grad_clip", "eval_interval", "optimizer", "muon_lr",
                  "muon_ns_steps", "decay_embeddings"}
START_NAMES = (*DATA_FIELDS, *ARCH_FIELDS, *OPTIM_FIELDS, "val_split")  # /train_start's parameters
# Start, and a class run the teacher pushes (explorer.tabs.class_notice), take turns in one queue: Gradio's default
# of 2 at a time (launch's default_concurrency_limit), as when a pushed run clicked Start
START_QUEUE = dict(concurrency_limit=2, concurrency_id="train_start")
QUIET = dict(api_visibility="private", concurrency_limit=None)  # page-only events that only read the session
FULL_BATCH_INFO = "this task trains on all its examples at every step (a full batch), whatever the slider says"


@dataclass
class TrainStart:
    """What Start reads and writes; a class run starts through the same callback with the same controls."""

    inputs: list  # the Data tab's choices, the architecture, the optimiser, the validation split (START_NAMES)
    outputs: list  # the status line and the poll timer
    watched: dict  # {poll's field: component} and "running": the timer; what the page shows of the run

    def show_refusal(self, event) -> None:
        """When event fails (Start refused: a run is going, bad settings, no slot free), the status line keeps the
        sentence the action noted (no bare error badge, no toast to catch in time) and the page polls the run
        that goes on, if one does (after a reload the page knows of none)."""
        event.failure(bind(_watched, fields=self.watched), None, list(self.watched.values()), **QUIET)


# A slider's width at which Gradio shows both ends of its range: at the 160 px it got among eight controls the
# Dropout slider's "0.5" was cut to "0.", and it read "0 … 0" (the first row's sliders, 200 px, show "512").
RANGE_SLIDER_PX = 200


def _architecture_controls():
    m = CLASSROOM.model_config(vocab_size=2).to_dict()
    with gr.Row():
        n_layers = RawSlider(1, 8, value=m["n_layers"], step=1, label="Layers")
        n_heads = RawSlider(1, 8, value=m["n_heads"], step=1, label="Heads")
        d_model = RawSlider(2, 512, value=m["d_model"], step=2, label="d_model")  # 2: seed 002; 6: seed 004
        mlp_ratio = RawNumber(mlp_ratio_of(m), label="FFN width (× d_model)", minimum=0.25, maximum=8, step=0.25,
                              info="FFN neurons per layer = this × d_model; GPT-2 uses 4")
        block = RawSlider(2, 256, value=m["block_size"], step=1, label="Block size (context)")
        init = RawDropdown(list(INITS), value=m["init"], label="Initialisation",
                           info="gpt2: weights start N(0, 0.02²); 1/sqrt(d_model): larger, as Nanda et al. (grokking)")
    with gr.Row():
        activation = RawDropdown(list(ACTIVATIONS), value=m["activation"], label="Activation")
        norm = RawDropdown(["layernorm", "rmsnorm", "none"], value=m["norm"], label="Norm")
        placement = RawDropdown(["pre", "post"], value=m["norm_placement"], label="Norm placement")
        positional = RawDropdown(list(POSITIONALS), value=m["positional"], label="Positions")
        tie = gr.Checkbox(m["tie_weights"], label="Tie embedding and output weights")
        attn_only = gr.Checkbox(m["attn_only"], label="Attention only (no FFN)")
        dropout = RawSlider(0, 0.5, value=m["dropout"], step=0.05, label="Dropout", min_width=RANGE_SLIDER_PX)
        qk_norm = gr.Checkbox(m["qk_norm"], label="QK-norm (RMSNorm on each head's q and k)")
    return [n_layers, n_heads, d_model, block, activation, norm, placement, positional, tie, attn_only, dropout,
            qk_norm, mlp_ratio, init]


def _optimiser_controls():
    t = CLASSROOM.train_config(device="cpu")
    with gr.Row():
        lr = RawNumber(t.lr, label="Learning rate")
        batch = RawSlider(1, 128, value=t.batch_size, step=1, label="Batch size")  # batch_size_info adds a note
        steps = RawNumber(t.max_steps, label="Steps", precision=0, minimum=1)
        warmup = RawNumber(t.warmup_steps, label="Warmup steps", precision=0, minimum=0)
        wd = RawNumber(t.weight_decay, label="Weight decay", minimum=0)
        clip = RawNumber(t.grad_clip, label="Gradient clipping (0 = off)", minimum=0)
        eval_every = RawNumber(t.eval_interval, label="Evaluate every N steps", precision=0, minimum=1)
    with gr.Row():
        optimizer = RawDropdown(list(OPTIMIZERS), value=t.optimizer, label="Optimiser (muon: Muon for the "
                                "blocks' matrices, AdamW at the learning rate above for the rest)")
        muon_lr = RawNumber(t.muon_lr, label="Muon learning rate", minimum=0, visible=uses_muon(t.optimizer))
        ns_steps = RawNumber(t.muon_ns_steps, label="Muon Newton–Schulz steps", precision=0, minimum=1,
                             maximum=MAX_NS_STEPS, info="per update; fewer are cheaper and rougher",
                             visible=uses_muon(t.optimizer))
        decay_embeddings = gr.Checkbox(t.decay_embeddings, label="Weight decay on the embeddings too",
                                       info="as Nanda et al. (grokking); else only the weight matrices decay")
    return [lr, batch, steps, warmup, wd, clip, eval_every, optimizer, muon_lr, ns_steps, decay_embeddings]


def uses_muon(optimizer) -> bool:
    return optimizer == "muon"


def muon_controls(optimizer) -> list:
    """Muon's learning rate and Newton–Schulz steps show only while the optimiser is Muon (AdamW reads neither)."""
    return [gr.update(visible=uses_muon(optimizer))] * 2


def batch_size_info(corpus: str):
    """The Batch size note shows only while the Data tab holds a task trained full batch (modular addition, the
    grokking preset's): there the slider does not apply."""
    full_batch = CHOICES.get(corpus, {}).get("name") in FULL_BATCH_TASKS
    return gr.update(info=FULL_BATCH_INFO if full_batch else "")


def _register(arch, optim) -> None:
    """Name the controls for links and lessons; the optimiser's details are advanced (hidden in simple lessons)."""
    for field, component in zip((*ARCH_FIELDS, *OPTIM_FIELDS), (*arch, *optim)):
        register_control(CONTROL_NAMES.get(field, field), component, advanced=field in ADVANCED_OPTIM)


def _preset_row():
    """-> (preset dropdown, its note): picking a preset fills the controls below (and a seed's data choice)."""
    with gr.Row(equal_height=True):
        preset = RawDropdown(list(PRESETS), value=DEFAULT_PRESET, label="Preset", scale=1,
                             info="fills the controls below; the seed presets also pick their text on the Data tab")
        note = gr.Markdown(f"**{DEFAULT_PRESET}**: {CLASSROOM.description}")
    register_control("preset", preset)
    return preset, note


def build_train_tab(data_inputs, model_info, opening, resumed) -> TrainStart:
    """data_inputs: the Data tab's; resumed: the page-load event (the parameter count follows it). -> what Start
    reads and writes."""
    gr.Markdown("Set the model's shape and the optimiser, then watch it learn. The other tabs inspect the "
                "trained model once you pause or it finishes.")
    corpus, _, kind, bpe_vocab, val_split = data_inputs
    preset, note = _preset_row()
    arch = _architecture_controls()
    params = gr.Markdown()
    optim = _optimiser_controls()
    _register(arch, optim)
    # A pick fills the controls; a link or lesson step that names a preset fills them itself (its other
    # settings win), so only the note follows every change of the dropdown.
    preset.input(bind(apply_preset), preset, [*arch, *optim, corpus, kind, bpe_vocab, val_split], **QUIET)
    preset.change(bind(preset_note), [preset, corpus, kind, bpe_vocab], note, **QUIET)
    corpus.change(batch_size_info, corpus, optim[OPTIM_FIELDS.index("batch_size")], **QUIET)  # set by a preset too
    optimizer, muon = optim[OPTIM_FIELDS.index("optimizer")], [optim[OPTIM_FIELDS.index(f)] for f in MUON_FIELDS]
    optimizer.change(muon_controls, optimizer, muon, **QUIET)  # a pick, a preset, a link or a lesson step
    with gr.Row():
        start = gr.Button("Start", variant="primary", elem_id="te-train-start")
        pause, resume, stop = gr.Button("Pause"), gr.Button("Resume"), gr.Button("Stop", variant="stop")
        untrained = gr.Button("Use the untrained model (random weights)")
    status = gr.Markdown("No training run yet: set the controls and press **Start**.")
    timer = gr.Timer(1.0, active=False)
    with gr.Row():
        with gr.Column(scale=3):  # Plotly.react, not gr.LinePlot: no remount, zoom kept across polls
            loss = live_plot(340, elem_id="live-loss")
            gr.Markdown("Loss: how surprised the model is by the real next token (lower is better).",
                        elem_classes=["te-caption"])
        with gr.Column(scale=2):
            live = live_plot(300, elem_id="live-attention")
            live_caption = gr.Markdown(LIVE_CAPTION, elem_classes=["te-caption"])
    progress_chart = live_plot(360, elem_id="live-progress")
    progress_note = gr.Markdown("Progress measures appear here at each evaluation.", elem_classes=["te-caption"])
    sample = gr.Textbox(label="Latest sample from the model", lines=6, interactive=False)

    count, counted = _newest_count(), [corpus, kind, bpe_vocab, *arch]  # the vocabulary Start would use
    stamp = gr.Number(visible=False)  # the page's stamp of each count request (STAMP_JS)
    # One listener for every control, counting once more with their final values when they change while it counts
    # (as redraw_on); each request stamped by the page, so an older one never overwrites a newer count.
    gr.on([c.change for c in counted], count, [stamp, *counted], params, js=STAMP_JS,
          api_visibility="private", trigger_mode="always_last", concurrency_limit=None)
    progress = {"loss": loss, "status": status, "live": live, "live_caption": live_caption, "sample": sample,
                "progress": progress_chart, "progress_note": progress_note}
    watched = {**progress, "running": timer}
    starts = TrainStart([corpus, kind, bpe_vocab, *arch, *optim, val_split], [status, timer], watched)
    started = start.click(bind(start_training, names=START_NAMES), starts.inputs, status, api_name="train_start",
                          **API, **START_QUEUE)
    started.success(lambda: gr.Timer(active=True), None, timer, api_visibility="private")
    starts.show_refusal(started)
    untrained.click(bind(use_untrained_model, names=(*DATA_FIELDS, *ARCH_FIELDS, "val_split")),
                    [corpus, kind, bpe_vocab, *arch, val_split], model_info,
                    api_name="init_model", **API)
    for button, action in ((pause, "pause"), (resume, "resume"), (stop, "stop")):
        starts.show_refusal(button.click(bind(lambda s, a=action: control(s, a)), None, status,
                                         api_name=f"train_{action}", **API))
    polled = {**watched, "model_info": model_info}
    timer.tick(bind(_poll_for_ui, fields=polled), None, list(polled.values()), api_visibility="private",
               concurrency_limit=None)
    gr.Button("Refresh progress", size="sm").click(bind(_progress, fields=progress), None, list(progress.values()),
                                                   api_name="train_status", **API)
    data_button("train", [loss, live, progress_chart], [*arch, *optim])
    _model_controls(model_info, opening)
    resumed.then(count, [stamp, *counted], params, js=STAMP_JS, api_visibility="private")
    resumed.then(bind(_watched, fields=watched), None, list(watched.values()), **QUIET)  # a reloaded page's run
    return starts


# The page's clock in microseconds when it sends a parameter count (a counter tells apart two in one millisecond),
# in place of the hidden stamp's value: see explorer.callbacks.train.newest_param_count.
STAMP_JS = ("(stamp, ...values) => [Date.now() * 1000 + (window.teCounts = ((window.teCounts || 0) + 1) % 1000),"
            " ...values]")


def _newest_count():
    """The count handler: the line keeps what it shows when the server skipped an older request."""
    count = bind(newest_param_count)

    def newest(request: gr.Request, *values):
        text = count(request, *values)
        return gr.skip() if text is None else text
    newest.__name__ = "newest_param_count"  # as the callback (tests find the listener by it)
    return newest


def _progress(session):
    """What the Train tab shows of the run, without whether it goes on (only the page's timer reads that)."""
    shown = poll(session)
    del shown["running"]
    return shown


def _watched(session):
    """poll's view, its timer kept ticking while the run goes on (a reloaded page finds its run again this way)."""
    shown = poll(session)
    return {**shown, "running": gr.Timer(active=shown["running"])}


def _poll_for_ui(session):
    """_watched, and the inspected model's summary."""
    return {**_watched(session), "model_info": model_summary(session)}


def _model_controls(model_info, opening):
    with gr.Accordion("Models: pick a shipped one, save yours, load a saved one", open=True):
        with gr.Row():
            shipped = RawDropdown(model_choices(), value=(shipped_models() or [None])[0], label="Shipped models")
            use = gr.Button("Use this model")
            save = gr.Button("Save inspected model as .zip")
            download = gr.File(label="Download", interactive=False)
            upload = RawFile(label="Load a .zip checkpoint", file_types=[".zip"], type="filepath")
    hidden_after(announced(use.click, opening_note, shipped, opening).then(
        bind(pick_shipped), shipped, model_info, api_name="use_shipped_model", **API), opening)
    save.click(bind(save_zip), None, download, api_name="save_model", **API)
    upload.upload(bind(load_zip), upload, model_info, api_name="load_model", **API)
