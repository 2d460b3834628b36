"""Embeddings tab: PCA of token, position and token+position vectors, hidden states, positions."""
import gradio as gr

from explorer.tabs.binding import bind
from explorer.tabs.common import ANALYSIS, API, caption, model_slider, redraw_on, run_button
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.raw_inputs import RawRadio

embeddings_view = callbacks("embeddings", "embeddings_view")


def build_embeddings_tab(prompt, drop):
    """prompt, drop: the shared prompt box and its drop-unknown checkbox. -> (view, inputs, outputs), named controls."""
    gr.Markdown("Each token and each position is a vector of d_model numbers. PCA squeezes them to 2 or 3 "
                "dimensions so we can see which ones the model treats as similar.")
    run = run_button("Show embeddings")
    with gr.Row():
        dims = RawRadio(["2", "3"], value="2", label="PCA dimensions")
        layer = model_slider("hidden", "Hidden state after layer (0 = embeddings)")
    note = caption()
    with gr.Row():
        tok = gr.Plot(label="Token embeddings")
        pos = gr.Plot(label="Position embeddings")
    with gr.Row():
        both = gr.Plot(label="Token + position")
        hidden = gr.Plot(label="Hidden states")
    with gr.Row():
        heat = gr.Plot(label="Position embedding values")
        norms = gr.Plot(label="Token vs position vector sizes")
    inputs, outputs = [prompt, dims, layer, drop], [tok, pos, both, hidden, heat, norms, note]
    fn = bind(embeddings_view, shared=True)
    run.click(fn, inputs, outputs, api_name="embeddings", **API, **ANALYSIS)
    redraw_on([dims.change, layer.release], fn, inputs, outputs)
    data_button("embeddings", outputs, inputs)
    return (fn, inputs, outputs), {}
