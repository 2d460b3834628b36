"""The Features tab's "Train an SAE on this model": settings, Start/Pause/Resume/Stop, a live chart, the result."""
import gradio as gr

from explorer.tabs.binding import bind
from explorer.tabs.common import API, caption
from explorer.tabs.lazy import callbacks
from explorer.tabs.live_plot import live_plot
from explorer.tabs.raw_inputs import RawDropdown, RawNumber

(sae_training_setup, train_features, features_training_control, features_training_poll, features_training_status,
 sae_download) = callbacks("features_training", "sae_training_setup", "train_features", "features_training_control",
                           "features_training_poll", "features_training_status", "sae_download")
START_QUEUE = dict(concurrency_limit=2, concurrency_id="train_start")  # the Train tab's Start queue (tabs/train.py)

ABOUT = """Train a sparse autoencoder on the inspected model's activations at one hook point, in a training slot like a
model's run: first the model reads its training text and the activations are collected, then the SAE trains on them
(live chart below), then it is evaluated on the validation text. It then becomes this tab's SAE."""


def build_features_training() -> None:
    with gr.Accordion("Train an SAE on this model", open=False) as section:
        gr.Markdown(ABOUT)
        with gr.Row():
            hook = RawDropdown(["blocks.2.hook_resid_post"], value="blocks.2.hook_resid_post", label="Hook point",
                               allow_custom_value=True, elem_id="sae-hook")
            features = RawNumber(1024, label="Features (width)", precision=0, minimum=1, elem_id="sae-features",
                                 info="8 × d_model by default")
            k = RawNumber(32, label="k (active features per token, TopK)", precision=0, minimum=1)
            tokens = RawNumber(524_288, label="Tokens (activations collected)", precision=0, minimum=16_384,
                               elem_id="sae-tokens")
        note = caption()
        with gr.Row():
            start = gr.Button("Start training the SAE", variant="primary", elem_id="sae-start")
            pause, resume, stop = gr.Button("Pause"), gr.Button("Resume"), gr.Button("Stop", variant="stop")
        status = gr.Markdown(elem_id="sae-status")
        timer = gr.Timer(1.0, active=False)
        chart = live_plot(520, elem_id="sae-training-chart")
        chart_caption = caption()
        result = gr.Markdown(elem_id="sae-result")
        with gr.Row():
            download = gr.Button("Download the SAE (.zip, SAELens's layout)")
            file = gr.File(label="SAE", interactive=False, elem_id="sae-file")
        evaluation = gr.Textbox(visible=False)  # /train_features_status's evaluation (JSON)
    quiet = dict(api_visibility="private", concurrency_limit=None)
    setup = {"hook": hook, "features": features, "k": k, "tokens": tokens, "note": note}
    section.expand(bind(sae_training_setup, fields=setup), None, list(setup.values()), **quiet)
    start.click(bind(train_features), [hook, features, k, tokens], status, api_name="train_features", **API,
                **START_QUEUE).success(lambda: gr.Timer(active=True), None, timer, api_visibility="private")
    for button, action in ((pause, "pause"), (resume, "resume"), (stop, "stop")):
        button.click(bind(lambda s, a=action: features_training_control(s, a)), None, status,
                     api_name=f"train_features_{action}", **API)
    polled = {"status": status, "chart": chart, "caption": chart_caption, "result": result, "running": timer}
    timer.tick(bind(lambda s: polled_for_ui(features_training_poll(s)), fields=polled), None, list(polled.values()),
               **quiet)
    gr.Button("Refresh", size="sm", visible=False).click(bind(features_training_status), None, [status, evaluation],
                                                         api_name="train_features_status", **API)
    download.click(bind(sae_download), None, file, api_name="download_sae", **API)


def polled_for_ui(shown: dict) -> dict:
    """A poll's answer for the page: the timer runs while the run does."""
    return {**shown, "running": gr.Timer(active=shown["running"])}
