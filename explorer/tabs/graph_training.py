"""The Graph tab's "Train transcoders on this model": settings, Start/Pause/Resume/Stop, a live chart, the result."""
import gradio as gr

from explorer.tabs.binding import bind
from explorer.tabs.common import API, caption
from explorer.tabs.features_training import START_QUEUE, polled_for_ui
from explorer.tabs.lazy import callbacks
from explorer.tabs.live_plot import live_plot
from explorer.tabs.raw_inputs import RawNumber

(transcoders_training_setup, train_transcoders, transcoders_training_control, transcoders_training_poll,
 transcoders_training_status, transcoders_download) = callbacks(
    "graph_training", "transcoders_training_setup", "train_transcoders", "transcoders_training_control",
    "transcoders_training_poll", "transcoders_training_status", "transcoders_download")

ABOUT = """Train one transcoder per layer for the inspected model, in a training slot like a model's run: the model reads
its training text once and every FFN's inputs and outputs are collected, then each layer's transcoder learns to write
its FFN's output from its input through a few features (live chart: the layers one after another), then the set is
evaluated with every FFN replaced. The graphs above then use it. About 2 minutes for the Shakespeare model."""


def build_transcoder_training() -> None:
    with gr.Accordion("Train transcoders on this model", open=False) as section:
        gr.Markdown(ABOUT)
        with gr.Row():
            features = RawNumber(1024, label="Features per layer", precision=0, minimum=1, elem_id="tc-features",
                                 info="8 × d_model by default")
            k = RawNumber(32, label="k (active features per token, TopK)", precision=0, minimum=1)
            tokens = RawNumber(262_144, label="Tokens (FFN inputs and outputs collected)", precision=0,
                               minimum=16_384, elem_id="tc-tokens")
        with gr.Row():
            start = gr.Button("Start training the transcoders", variant="primary", elem_id="tc-start")
            pause, resume, stop = gr.Button("Pause"), gr.Button("Resume"), gr.Button("Stop", variant="stop")
        status = gr.Markdown(elem_id="tc-status")
        timer = gr.Timer(1.0, active=False)
        chart = live_plot(520, elem_id="tc-training-chart")
        chart_caption = caption()
        result = gr.Markdown(elem_id="tc-result")
        with gr.Row():
            download = gr.Button("Download the transcoders (.zip, circuit-tracer's layout)")
            file = gr.File(label="Transcoders", interactive=False, elem_id="tc-file")
        evaluation = gr.Textbox(visible=False)  # /train_transcoders_status's evaluation (JSON)
    quiet = dict(api_visibility="private", concurrency_limit=None)
    setup = {"features": features, "k": k, "tokens": tokens}  # the inspected model's defaults, as the SAE's
    section.expand(bind(transcoders_training_setup, fields=setup), None, list(setup.values()), **quiet)
    start.click(bind(train_transcoders), [features, k, tokens], status, api_name="train_transcoders", **API,
                **START_QUEUE).success(lambda: gr.Timer(active=True), None, timer, api_visibility="private")
    for button, action in ((pause, "pause"), (resume, "resume"), (stop, "stop")):
        button.click(bind(lambda s, a=action: transcoders_training_control(s, a)), None, status,
                     api_name=f"train_transcoders_{action}", **API)
    polled = {"status": status, "chart": chart, "caption": chart_caption, "result": result, "running": timer}
    timer.tick(bind(lambda s: polled_for_ui(transcoders_training_poll(s)), fields=polled), None,
               list(polled.values()), **quiet)
    gr.Button("Refresh", size="sm", visible=False).click(bind(transcoders_training_status), None, [status, evaluation],
                                                         api_name="train_transcoders_status", **API)
    download.click(bind(transcoders_download), None, file, api_name="download_transcoders", **API)
