"""Grokking lab tab: a model of a + b mod p in the Fourier basis, and the three phases of its training."""
from types import SimpleNamespace

import gradio as gr

from explorer.tabs.binding import bind
from explorer.tabs.common import ANALYSIS, API, caption
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.raw_inputs import RawNumber

grokking_view, open_shipped_grokking = callbacks("grokking", "grokking_view", "open_shipped_grokking")

INTRO = """**Grokking.** A one-layer transformer learns a + b mod p from part of the pairs. It first memorises
them (train accuracy 100 %, test accuracy low), then, long after, generalises to the pairs it never saw. Nanda et
al. (2023) found how: it writes each number as waves (cosines and sines of a few *key frequencies*) and reads the
answer off cos(2πk(a + b − c)/p). Train the **grokking** preset on the Train tab (weight decay on: without it the model
never generalises), or open the shipped one, then press **Show the lab**."""
OPENING = "Opening the shipped grokking model…"
# what the lab computes (explorer.callbacks.grokking.lab_of), said while it runs: seconds on a busy machine
COMPUTING = ("Computing the lab: the model on all p² pairs (a, b), their Fourier transforms and the loss with the key "
             "frequencies removed…")
open_shipped, lab = bind(open_shipped_grokking), bind(grokking_view, shared=True)  # the shipped model's lab: once


def grokking_model(request: gr.Request, progress=gr.Progress()):
    """Open the shipped grokking model, saying so while it loads."""
    progress(0, desc=OPENING)
    return open_shipped(request)


def grokking(neuron=None, request: gr.Request = None, progress=gr.Progress()):
    """The lab's five charts and caption, saying what is computed while it runs."""
    progress(0, desc=COMPUTING)
    return lab(request, neuron)


def precompute_shipped_lab() -> None:
    """Compute the shipped model's lab as the first click would (empty neuron), so every session's first click
    reuses it (the server calls this once its warm-up is over: a class pressing at once then waits on nobody)."""
    from explorer.common.shipped_list import shipped_models
    from explorer.state.session import REGISTRY

    if "grokking" not in shipped_models():
        return
    page = SimpleNamespace(session_hash="warm-up:grokking")
    try:
        grokking_model(page)
        grokking(None, page)
    finally:
        REGISTRY.close(page.session_hash)


def build_grokking_tab(model_info):
    gr.Markdown(INTRO)
    with gr.Row():
        shipped = gr.Button("Open the shipped grokking model")
        neuron = RawNumber(None, label="FFN neuron (empty: the most active)", precision=0, minimum=0)
        show = gr.Button("Show the lab", variant="primary")
    note = caption()
    with gr.Row():
        embedding = gr.Plot(label="Embedding per frequency")
        neuron_map = gr.Plot(label="A neuron over every (a, b)")
    logits = gr.Plot(label="Logits in the Fourier basis")
    with gr.Row():
        phases = gr.Plot(label="Losses and the three phases")
        accuracy = gr.Plot(label="Accuracy")
    outputs = [embedding, neuron_map, logits, phases, accuracy, note]
    shipped.click(grokking_model, None, model_info, api_name="grokking_model", **API)
    show.click(grokking, neuron, outputs, api_name="grokking", **API, **ANALYSIS)
    data_button("grokking", outputs, [neuron])
