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


def layer_slider(label: str = "Layer", maximum: int = 3):
    return gr.Slider(0, maximum, value=0, step=1, label=label)
