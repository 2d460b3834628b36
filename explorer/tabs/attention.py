import gradio as gr

from ..binding import bind
from ..callbacks.attention import attention_view
from ..callbacks.history import snapshot_view
from ..figures.heads import HEAD_TABLE_HEADERS
from .common import ANALYSIS, API, caption, model_slider, prompt_row
from .raw_inputs import RawSlider


def build_attention_tab():
    """-> (run event args) so the app can analyse the default prompt on load."""
    gr.Markdown("Every attention head of every layer for your prompt. Each row of a heatmap is a query "
                "token; the colour says how much it looks at each earlier (key) token.")
    prompt, drop, run = prompt_row("Show attention")
    with gr.Row():
        layer = model_slider("layer", "Layer")
        head = model_slider("head", "Head")
        query = model_slider("query", "Query position for the bars (-1 = last)")
    note = caption()
    grid = gr.Plot(label="All heads (layer × head)")
    with gr.Row():
        big = gr.Plot(label="Selected head")
        bars = gr.Plot(label="Where one query looks")
    steps = gr.Plot(label="How the pattern is made")
    stats = gr.Dataframe(headers=HEAD_TABLE_HEADERS, label="Head statistics", interactive=False, wrap=True)
    inputs = [prompt, layer, head, query, drop]
    outputs = [grid, big, steps, bars, stats, note]
    fn = bind(attention_view, shared=True)
    run.click(fn, inputs, outputs, api_name="attention", **API, **ANALYSIS)
    prompt.submit(fn, inputs, outputs, api_visibility="private", **ANALYSIS)
    for control in (layer, head, query):
        control.release(fn, inputs, outputs, api_visibility="private", **ANALYSIS)
    with gr.Accordion("Watch the heads form during training", open=False):
        progress = RawSlider(0, 1, value=1, step=0.01, label="Training progress (0 = start, 1 = end)")
        history_note = caption()
        history_grid = gr.Plot(label="All heads at that point of training (on the fixed probe text)")
    progress.release(bind(snapshot_view, shared=True), progress, [history_grid, history_note], api_name="snapshot",
                     **API, **ANALYSIS)
    return fn, inputs, outputs
