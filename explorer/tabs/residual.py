"""Residual stream tab: its size across layers, the updates written into it, the stream, the logit lens."""
import gradio as gr

from explorer.tabs.binding import bind
from explorer.tabs.common import ANALYSIS, API, caption, model_slider, redraw_on, run_button
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.raw_inputs import RawRadio

residual_view = callbacks("residual", "residual_view")


def build_residual_tab(prompt, drop):
    """prompt, drop: the shared prompt box and its drop-unknown checkbox. -> (view, inputs, outputs), named controls."""
    gr.Markdown("The residual stream is the running sum every layer reads from and writes to. "
                "Here: how big it is, how big each layer's updates are, and what it would predict at each layer.")
    run = run_button("Show residual stream")
    with gr.Row():
        layer = model_slider("layer", "Layer (for the per-position charts)")
        mode = RawRadio(["norm", "full"], value="norm", label="Heatmap: vector size per position, or every dimension")
    note = caption()
    with gr.Row():
        norms = gr.Plot(label="Residual norm across layers")
        updates = gr.Plot(label="Update size per layer")
    with gr.Row():
        per_pos = gr.Plot(label="Update vs residual per position")
        variance = gr.Plot(label="Variance: residual vs attention output")
    heatmap = gr.Plot(label="The residual stream, layer by layer")
    lens = gr.Plot(label="Logit lens")
    inputs, outputs = [prompt, layer, mode, drop], [norms, updates, per_pos, heatmap, variance, lens, note]
    fn = bind(residual_view, shared=True)
    run.click(fn, inputs, outputs, api_name="residual", **API, **ANALYSIS)
    redraw_on([layer.release], fn, inputs, outputs)
    mode.change(fn, inputs, outputs, api_visibility="private", **ANALYSIS)
    data_button("residual", outputs, inputs)
    return (fn, inputs, outputs), {"layer": layer}
