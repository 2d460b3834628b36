"""Building blocks tab: what a norm layer does to the residual stream, and the activation functions."""
import gradio as gr

from explorer.tabs.binding import bind
from explorer.tabs.common import ANALYSIS, API, caption, model_slider, redraw_on, run_button
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks

blocks_view = callbacks("blocks", "blocks_view")


def build_blocks_tab(prompt, drop):
    """Seed 003's building blocks. prompt, drop: the shared prompt box and its drop-unknown checkbox.
    -> (view, inputs, outputs), named controls."""
    gr.Markdown("Two small parts of every block, up close: the norm layer that rescales the residual stream "
                "before attention (shown on the real values of the inspected model for the shared prompt), "
                "and the non-linearity of the FFN.")
    run = run_button("Show building blocks")
    layer = model_slider("layer", "Layer")
    note = caption()
    norm = gr.Plot(label="Norm layer: before and after")
    activations = gr.Plot(label="Activation functions")
    inputs, outputs = [prompt, layer, drop], [norm, activations, note]
    fn = bind(blocks_view, shared=True)
    run.click(fn, inputs, outputs, api_name="blocks", **API, **ANALYSIS)
    redraw_on([layer.release], fn, inputs, outputs)
    data_button("blocks", outputs, inputs)
    return (fn, inputs, outputs), {"layer": layer}
