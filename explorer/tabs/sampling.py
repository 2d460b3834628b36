"""Sampling tab: the next-token distribution and its knobs, side-by-side settings, step-by-step generation."""
import gradio as gr

from explorer.common.controls import COMPARE_HEADERS, DEFAULT_COMPARISON, GENERATION_TABLE_HEADERS
from explorer.tabs.binding import bind
from explorer.tabs.common import ANALYSIS, API, GENERATION, caption, clear_when_changed, redraw_on, run_button
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.raw_inputs import RawNumber, RawSlider, RawTable
from explorer.teaching.glossary import meaning, words_note

comparison_view, distribution_view, steps_view = callbacks(
    "sampling", "comparison_view", "distribution_view", "steps_view")


def build_sampling_tab(prompt, drop, model_info):
    """prompt, drop: the shared prompt box and its drop-unknown checkbox. -> (view, inputs, outputs), named controls."""
    gr.Markdown("The model gives a probability to every possible next token. Sampling settings decide "
                "which of them may be picked.")
    run = run_button("Show next-token distribution")
    chat = gr.Checkbox(False, label="Chat format: wrap the prompt in the model's chat template (a pretrained chat "
                       "model such as SmolLM2-135M-Instruct answers it, and generation stops where its answer ends)")
    with gr.Row():
        temperature = RawSlider(0, 3, value=1.0, step=0.05, label="Temperature (0 = always the top token)")
        top_k = RawSlider(0, 100, value=0, step=1, label="Top-k (0 = off)")
        top_p = RawSlider(0, 1, value=1.0, step=0.01, label="Top-p (1 = off)")
        min_p = RawSlider(0, 1, value=0.0, step=0.01, label="Min-p (0 = off)", info=meaning("min-p"))
    note = caption()
    with gr.Row():
        dist = gr.Plot(label="Next-token distribution before and after filtering")
        temp = gr.Plot(label="Softmax sensitivity to temperature")
    knobs = [temperature, top_k, top_p, min_p]
    fn = bind(distribution_view, shared=True)
    inputs = [prompt, *knobs, drop, chat]
    run.click(fn, inputs, [dist, temp, note], api_name="next_token", **API, **ANALYSIS)
    redraw_on([k.release for k in knobs], fn, inputs, [dist, temp, note])

    gr.Markdown("### Side by side\nEach row is one setting; all columns start from the same prompt and seed. "
                + words_note(["distinct-2", "repetition", "mean log-prob"], lead="Under each column"))
    with gr.Row():
        table = RawTable(DEFAULT_COMPARISON, headers=COMPARE_HEADERS, datatype="number", row_count=4,
                             column_count=4, interactive=True, label="Settings to compare", scale=3)
        with gr.Column(scale=1):
            length = RawSlider(10, 500, value=150, step=10, label="New tokens")
            seed = RawNumber(0, label="Seed", precision=0)
            go = gr.Button("Compare", variant="primary")
            working = gr.Markdown(elem_classes=["te-caption"])  # empty: Compare's timer while it generates
    columns = gr.HTML(label="Generations")
    go.click(bind(comparison_view, shared=True), [prompt, table, length, seed, drop, chat], columns, api_name="compare",
             show_progress_on=[working], **API, **GENERATION)

    gr.Markdown("### Step by step\nGenerate with the knobs above; each token is shaded by its probability.")
    step_go = gr.Button("Generate step by step")
    text = gr.HTML()
    rows = gr.Dataframe(headers=GENERATION_TABLE_HEADERS,
                        interactive=False, label="Steps")
    step_go.click(bind(steps_view, shared=True), [prompt, *knobs, length, seed, drop, chat], [rows, text],
                  api_name="generate", **API, **GENERATION)
    # another model's or prompt's text never stands under this one (a lesson moved on from SmolLM2's chat answer)
    clear_when_changed([prompt, model_info], [columns], "Compare", html=True)
    clear_when_changed([prompt, model_info], [rows, text], "Generate step by step", html=True)
    data_button("sampling", [dist, temp, note, rows], [prompt, *knobs, drop, chat, table, length, seed])
    named = dict(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p, seed=seed, chat_format=chat)
    return (fn, inputs, [dist, temp, note]), named
