"""Grokking lab tab: a model of a + b mod p in the Fourier basis, and the three phases of its training."""
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
answer off cos(w(a + b − c)). Train the **grokking** preset on the Train tab (weight decay on: without it the model
never generalises), or open the shipped one, then press **Show the lab**."""


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
    shipped.click(bind(open_shipped_grokking), None, model_info, api_name="grokking_model", **API)
    show.click(bind(grokking_view), neuron, outputs, api_name="grokking", **API, **ANALYSIS)
    data_button("grokking", outputs, [neuron])
