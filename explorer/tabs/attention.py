"""Attention tab: every head at once, one head large, the four steps that make a pattern, one query's bars."""
import gradio as gr

from explorer.common.controls import HEAD_TABLE_HEADERS
from explorer.tabs.binding import bind
from explorer.tabs.common import ANALYSIS, API, caption, model_slider, redraw_on, run_button
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.live_plot import live_plot
from explorer.tabs.raw_inputs import RawSlider
from explorer.teaching.glossary import words_note

attention_page_view, clicked_head = callbacks("attention", "attention_page_view", "clicked_head")
snapshot_view, snapshot_when_opened = callbacks("history", "snapshot_view", "snapshot_when_opened")

STATS_HELP = ("**Head statistics**, averaged over the prompt's positions: the share of attention on the previous token, "
              "on itself and on the first token; how far back it looks; its **entropy** in **bits** (0 bits: all on one "
              "token; 1 bit: two tokens half and half; each extra bit doubles the number of tokens). The **no sink** "
              "columns measure the same after dropping the first token and rescaling what is left to 100%.")


def build_attention_tab(prompt, drop):
    """prompt, drop: the shared prompt box and its drop-unknown checkbox. -> (view, inputs, outputs) so the app
    can analyse on load and when the tab opens; and its named controls (for links and lessons)."""
    gr.Markdown("Every attention head of every layer for your prompt. Each row of a heatmap is a query "
                "token; the colour says how much it looks at each earlier (key) token. **Click a head in the "
                "grid** to look at it closely.")
    run = run_button("Show attention")
    with gr.Row():
        layer = model_slider("layer", "Layer")
        head = model_slider("head", "Head")
        query = model_slider("query", "Query position for the bars (-1 = last)")
    note = caption()
    gr.Markdown("**All heads (layer × head)**: click one to select it. A large model shows an overview of every "
                "head (click a cell) and the selected layer's heads.")
    grid = live_plot(400, clickable=True, elem_id="attention-grid")
    big = gr.Plot(label="Selected head")  # across the page: the default prompt's 60 positions each labelled
    bars = gr.Plot(label="Where one query looks")
    gr.Markdown("**How the pattern is made**, left to right: the raw scores, the scores after the causal mask, the "
                "softmax weights, and the head output z. " + words_note(["causal mask", "softmax", "value vectors"]))
    steps = gr.Plot(label="How the pattern is made")
    gr.Markdown(STATS_HELP)
    stats = gr.Dataframe(headers=HEAD_TABLE_HEADERS, label="Head statistics", interactive=False, wrap=True)
    inputs = [prompt, layer, head, query, drop]
    outputs = [grid, big, steps, bars, stats, note]
    fn = bind(attention_page_view, shared=True)
    run.click(fn, inputs, outputs, api_name="attention", **API, **ANALYSIS)
    redraw_on([layer.release, head.release, query.release], fn, inputs, outputs)
    grid.select(_select_clicked_head, None, [layer, head], api_visibility="private", concurrency_limit=None).then(
        fn, inputs, outputs, api_visibility="private", **ANALYSIS)
    data_button("attention", outputs, inputs)
    with gr.Accordion("Watch the heads form during training", open=False) as history:
        progress = RawSlider(0, 1, value=1, step=0.01, label="Training progress (0 = start, 1 = end)")
        history_note = caption()
        history_grid = gr.Plot(label="All heads at that point of training (on the fixed probe text)")
    progress.release(bind(snapshot_view, shared=True), progress, [history_grid, history_note], api_name="snapshot",
                     **API, **ANALYSIS)
    # opened, it shows the point the slider is at (a student opened it at 1 and saw an empty chart)
    history.expand(bind(snapshot_when_opened, shared=True), progress, [history_grid, history_note],
                   api_visibility="private", **ANALYSIS)
    return (fn, inputs, outputs), {"layer": layer, "head": head, "query": query}


def _select_clicked_head(evt: gr.EventData):
    """A click on the grid -> the layer and head sliders move to the clicked head (nothing for other clicks)."""
    data = evt._data if isinstance(evt._data, dict) else {}
    picked = clicked_head(data.get("name"), data.get("x"), data.get("y"))
    return (gr.skip(), gr.skip()) if picked is None else picked
