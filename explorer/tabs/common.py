"""Pieces several tabs share: the prompt row and the caption line."""
import gradio as gr

DEFAULT_PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak."
API = dict(api_visibility="public")
ANALYSIS = dict(concurrency_limit=4, concurrency_id="analysis")


def prompt_row(button_label: str):
    """-> (prompt textbox, drop-unknown checkbox, run button)."""
    with gr.Row(equal_height=True):
        prompt = gr.Textbox(DEFAULT_PROMPT, label="Prompt", lines=2, max_lines=6, scale=5)
        with gr.Column(scale=1, min_width=180):
            drop = gr.Checkbox(False, label="Drop unknown characters")
            run = gr.Button(button_label, variant="primary")
    return prompt, drop, run


def caption():
    return gr.Markdown(elem_classes=["te-caption"])


RANGE_CLASS = "te-range-"  # + kind; ui.py resizes these sliders whenever the inspected model changes


def model_slider(kind: str, label: str):
    """A slider over the model's layers, heads or positions (kind: see callbacks.models.slider_maxima)."""
    value = -1 if kind == "query" else 0
    return gr.Slider(value, 7, value=value, step=1, label=label, elem_classes=[RANGE_CLASS + kind])
