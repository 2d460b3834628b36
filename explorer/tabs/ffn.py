"""FFN tab: activation histograms, neuron sparsity and dead neurons, the tokens that excite a neuron."""
import gradio as gr

from explorer.common.controls import TOP_TOKENS_HEADERS
from explorer.tabs.binding import bind
from explorer.tabs.common import ANALYSIS, API, caption, model_slider, redraw_on, run_button
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.raw_inputs import RawNumber

ffn_view = callbacks("ffn", "ffn_view")


def build_ffn_tab(prompt, drop):
    """prompt, drop: the shared prompt box and its drop-unknown checkbox. -> (view, inputs, outputs), named controls."""
    gr.Markdown("The feed-forward network (FFN) works on each position separately: it widens the vector "
                "to d_mlp neurons, applies a non-linearity, and narrows it back.")
    run = run_button("Show FFN neurons")
    with gr.Row():
        layer = model_slider("layer", "Layer")
        neuron = RawNumber(0, label="Neuron (for the top-token table)", precision=0, minimum=0)
    note = caption()
    hist = gr.Plot(label="Activation values")
    sparsity = gr.Plot(label="How often each neuron fires")
    top = gr.Dataframe(headers=TOP_TOKENS_HEADERS,
                       label="Tokens that most activate the neuron", interactive=False)
    inputs, outputs = [prompt, layer, neuron, drop], [hist, sparsity, top, note]
    fn = bind(ffn_view, shared=True)
    run.click(fn, inputs, outputs, api_name="ffn", **API, **ANALYSIS)
    redraw_on([layer.release, neuron.submit], fn, inputs, outputs)
    data_button("ffn", outputs, inputs)
    return (fn, inputs, outputs), {"layer": layer, "neuron": neuron}
