import gradio as gr

from model_core.presets import get_preset

from ..binding import bind
from ..callbacks import models
from ..callbacks.train import control, param_count_view, poll, start_training
from ..live_plot import live_plot
from ..shipped import shipped_models
from .common import API

CLASSROOM = get_preset("classroom")


def _architecture_controls():
    m = CLASSROOM.model
    with gr.Row():
        n_layers = gr.Slider(1, 8, value=m["n_layers"], step=1, label="Layers")
        n_heads = gr.Slider(1, 8, value=m["n_heads"], step=1, label="Heads")
        d_model = gr.Slider(8, 512, value=m["d_model"], step=8, label="d_model")
        block = gr.Slider(4, 256, value=m["block_size"], step=4, label="Block size (context)")
    with gr.Row():
        activation = gr.Dropdown(["gelu", "relu", "swiglu"], value="gelu", label="Activation")
        norm = gr.Dropdown(["layernorm", "rmsnorm", "none"], value="layernorm", label="Norm")
        placement = gr.Dropdown(["pre", "post"], value="pre", label="Norm placement")
        positional = gr.Dropdown(["learned", "sinusoidal"], value="learned", label="Positions")
        tie = gr.Checkbox(True, label="Tie embedding and output weights")
        attn_only = gr.Checkbox(False, label="Attention only (no FFN)")
        dropout = gr.Slider(0, 0.5, value=0.0, step=0.05, label="Dropout")
    return [n_layers, n_heads, d_model, block, activation, norm, placement, positional, tie, attn_only, dropout]


def _optimiser_controls():
    t = CLASSROOM.train_config(device="cpu")
    with gr.Row():
        lr = gr.Number(t.lr, label="Learning rate")
        batch = gr.Slider(1, 128, value=t.batch_size, step=1, label="Batch size")
        steps = gr.Number(t.max_steps, label="Steps", precision=0, minimum=1)
        warmup = gr.Number(t.warmup_steps, label="Warmup steps", precision=0, minimum=0)
        wd = gr.Number(t.weight_decay, label="Weight decay", minimum=0)
        clip = gr.Number(t.grad_clip, label="Gradient clipping (0 = off)", minimum=0)
        eval_every = gr.Number(t.eval_interval, label="Evaluate every N steps", precision=0, minimum=1)
    return [lr, batch, steps, warmup, wd, clip, eval_every]


def build_train_tab(data_inputs, model_info):
    gr.Markdown("Set the model's shape and the optimiser, then watch it learn. The other tabs inspect the "
                "trained model once you pause or it finishes.")
    arch = _architecture_controls()
    params = gr.Markdown()
    optim = _optimiser_controls()
    with gr.Row():
        start = gr.Button("Start", variant="primary")
        pause, resume, stop = gr.Button("Pause"), gr.Button("Resume"), gr.Button("Stop", variant="stop")
    status = gr.Markdown("No training run yet: set the controls and press **Start**.")
    timer = gr.Timer(1.0, active=False)
    with gr.Row():
        with gr.Column(scale=3):  # Plotly.react, not gr.LinePlot: no remount, zoom kept across polls
            loss = live_plot(340, elem_id="live-loss")
            gr.Markdown("Loss: how surprised the model is by the real next token (lower is better).",
                        elem_classes=["te-caption"])
        with gr.Column(scale=2):
            live = live_plot(300, elem_id="live-attention")
            gr.Markdown("Attention of every head on a fixed probe text, updated as the model trains.",
                        elem_classes=["te-caption"])
    sample = gr.Textbox(label="Latest sample from the model", lines=6, interactive=False)

    count = bind(param_count_view)
    for c in arch:
        c.change(count, arch, params, api_visibility="private", concurrency_limit=None)
    start.click(bind(start_training), [*data_inputs[:1], *data_inputs[2:], *arch, *optim], status,
                api_name="train_start", **API).success(
        lambda: gr.Timer(active=True), None, timer, api_visibility="private")
    for button, action in ((pause, "pause"), (resume, "resume"), (stop, "stop")):
        button.click(bind(lambda s, a=action: control(s, a)), None, status, api_name=f"train_{action}", **API)
    timer.tick(bind(_poll_for_ui), None, [loss, status, live, sample, timer, model_info],
               api_visibility="private", concurrency_limit=None)
    gr.Button("Refresh progress", size="sm").click(bind(poll), None, [loss, status, live, sample],
                                                   api_name="train_status", **API)
    _model_controls(model_info)
    return arch, params


def _poll_for_ui(session):
    loss, status, live, sample, active = poll(session)
    return loss, status, live, sample, gr.Timer(active=active), models.model_summary(session)


def _model_controls(model_info):
    with gr.Accordion("Models: pick a shipped one, save yours, load a saved one", open=True):
        with gr.Row():
            shipped = gr.Dropdown(shipped_models(), value=(shipped_models() or [None])[0], label="Shipped models")
            use = gr.Button("Use this model")
            save = gr.Button("Save inspected model as .zip")
            download = gr.File(label="Download", interactive=False)
            upload = gr.File(label="Load a .zip checkpoint", file_types=[".zip"], type="filepath")
    use.click(bind(models.pick_shipped), shipped, model_info, api_name="use_shipped_model", **API)
    save.click(bind(models.save_zip), None, download, api_name="save_model", **API)
    upload.upload(bind(models.load_zip), upload, model_info, api_name="load_model", **API)
