"""Experiments tab, "Who wrote the answer?": direct logit attribution and activation patching."""
import gradio as gr

from explorer.common.controls import PATCH_CHOICES, PATCH_WITH_LAYER
from explorer.tabs.binding import bind
from explorer.tabs.common import API, HEAVY, caption, clear_when_changed, model_slider, run_button
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.raw_inputs import RawDropdown
from explorer.teaching.glossary import words_note
from explorer.teaching.prompt_pairs import DEFAULT_PAIR
from explorer.teaching.view_params import register_action, register_control

activation_patching_view, example_pair, logit_attribution_view = callbacks(
    "attribution", "activation_patching_view", "example_pair", "logit_attribution_view")

KINDS = list(PATCH_CHOICES)

DLA_INTRO = f"""### Who wrote the answer? Direct logit attribution
The residual stream is a **sum**: the embeddings, then every head and every FFN layer *add* what they write. So the
logit of the predicted token splits into one part per writer: a part above 0 pushes the prediction up, one below 0
pushes it down (red and blue in the heatmap of heads). {words_note(["logit"])}
Type an **answer** token (default: the model's top token) and optionally one it competes **against** (e.g.
“ Paris” against “ Rome”, with their leading spaces) to split the logit *difference* instead. The final norm
divides the stream by its size; that scale is frozen at this run's value, which makes the parts add up exactly."""

PATCHING_INTRO = """### Activation patching
Run a **clean** prompt and a **corrupted** one that differs where the answer is decided (the same length in
tokens). Then copy one activation from the clean run into the corrupted run and see how much of the clean answer
comes back: 0 % is the corrupted answer, 100 % the clean one. Where the share jumps is where the deciding
information lives."""


# js: a chart drawn for other inputs (another prompt, answer or model) is cleared, its caption says what to press
def build_attribution_section(prompt, drop, model_info) -> dict:
    """model_info: the model line above the tabs (a new model clears the charts). -> its controls that share a name
    with other tabs' (the head × position sweep's layer is `layer`)."""
    gr.Markdown(DLA_INTRO)
    with gr.Row():
        position = model_slider("query", "Position whose prediction is split (-1 = last)")
        target = gr.Textbox("", label="Answer token (empty: the model's top token)", max_lines=1)
        baseline = gr.Textbox("", label="Against token (optional)", max_lines=1)
    go = run_button("Split the logit")
    note = caption()
    numbers = gr.Markdown()
    parts = gr.Plot(label="Each part's share of the logit")
    sources = gr.Plot(label="The top head, by the position it read from")
    inputs, outputs = [prompt, position, target, baseline, drop], [parts, sources, numbers, note]
    split = bind(logit_attribution_view, heavy=True)
    go.click(split, inputs, outputs, api_name="logit_attribution", **API, **HEAVY)
    register_action("Split the logit", split, inputs, outputs)  # a lesson step may press it when it opens
    clear_when_changed([*inputs, model_info], outputs, "Split the logit")
    data_button("attribution", outputs, inputs)

    gr.Markdown(PATCHING_INTRO)
    with gr.Row():
        clean = gr.Textbox(DEFAULT_PAIR[0], label="Clean prompt", lines=2, max_lines=4)
        corrupted = gr.Textbox(DEFAULT_PAIR[1], label="Corrupted prompt", lines=2, max_lines=4)
    with gr.Row():  # wide enough for the longest choice in full (about 40 characters)
        kind = RawDropdown(KINDS, value=KINDS[0], label="What to patch", scale=2, min_width=380,
                           elem_id="te-patch-kind")
        layer = model_slider("layer", "Layer (for head × position)")
        layer.visible = KINDS[0] == PATCH_WITH_LAYER
        example = gr.Button("Use the example pair for this model")
        patch = run_button("Patch")
    pair_note = gr.Markdown()
    patch_note = caption()
    restored = gr.Plot(label="Share of the clean answer restored")
    patch_inputs = [clean, corrupted, kind, layer, target, baseline, drop]
    for name, component in (("answer", target), ("against", baseline), ("clean", clean), ("corrupted", corrupted),
                            ("patch", kind)):
        register_control(name, component)  # links and lessons: ?tab=experiments&clean=...&corrupted=...
    kind.change(layer_applies, kind, layer, api_visibility="private", concurrency_limit=None)  # set by hand or a step
    example.click(bind(example_pair), None, [clean, corrupted, pair_note], api_visibility="private")
    patching = bind(activation_patching_view, heavy=True)
    patch.click(patching, patch_inputs, [restored, patch_note], api_name="activation_patching", **API, **HEAVY)
    register_action("Patch", patching, patch_inputs, [restored, patch_note])
    clear_when_changed([*patch_inputs, model_info], [restored, patch_note], "Patch")
    data_button("patching", [restored, patch_note], patch_inputs)
    return {"layer": layer}


def layer_applies(kind: str):
    """The patching layer slider shows only for the one sweep that reads it (head × position, in one layer)."""
    return gr.update(visible=kind == PATCH_WITH_LAYER)
