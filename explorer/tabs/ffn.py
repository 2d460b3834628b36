import gradio as gr

from ..binding import bind
from ..callbacks.ffn import ffn_view
from ..figures.ffn import TOP_TOKENS_HEADERS
from .common import ANALYSIS, API, caption, model_slider, prompt_row
from .raw_inputs import RawNumber


def build_ffn_tab():
    gr.Markdown("The feed-forward network (FFN) works on each position separately: it widens the vector "
                "to d_mlp neurons, applies a non-linearity, and narrows it back.")
    prompt, drop, run = prompt_row("Show FFN neurons")
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
    prompt.submit(fn, inputs, outputs, api_visibility="private", **ANALYSIS)
    layer.release(fn, inputs, outputs, api_visibility="private", **ANALYSIS)
    neuron.submit(fn, inputs, outputs, api_visibility="private", **ANALYSIS)
    return fn, inputs, outputs
