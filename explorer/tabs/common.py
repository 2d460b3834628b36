"""Pieces several tabs share: the shared prompt, run buttons and the caption line."""
import json

import gradio as gr

from explorer.common.controls import DEFAULT_PROMPT, SLIDER_MAX
from explorer.common.limits import LIMITS
from explorer.tabs.raw_inputs import RawSlider

API = dict(api_visibility="public")
# Light views (a forward pass and figures, ~0.02-0.1 s) share `analysis`; work that takes seconds (ablation maps,
# whole-text passes, patching, model B) runs in the heavy slot (explorer.state.heavy_slot: one at a time, in fair
# turns), so it never holds up the light views. Gradio lets HEAVY_ADMITTED of them in to wait for their turn there
# (bind(..., heavy=True)); a request over the slot's per-address cap is refused at once, freeing its place.
ANALYSIS = dict(concurrency_limit=LIMITS.analysis_workers, concurrency_id="analysis")  # set before the UI is built
HEAVY_ADMITTED = 8
HEAVY = dict(concurrency_limit=HEAVY_ADMITTED, concurrency_id="heavy")
# Generation (Compare, step by step) is the one light view whose cost is mostly Python, per token: a class's
# Compares in the analysis pool took both slots and 75 % of the server's time (py-spy, bench.classroom), so
# they queue in slots of their own and the views keep theirs (Attention p95 4.4-4.8 s -> 0.65-1.85 s, 30 sessions).
GENERATION = dict(concurrency_limit=2, concurrency_id="generation")


def shared_prompt():
    """-> (prompt textbox, drop-unknown checkbox): the one prompt every analysis tab reads, above the tabs."""
    with gr.Row(equal_height=True):
        prompt = gr.Textbox(DEFAULT_PROMPT, label="Prompt", lines=2, max_lines=6, scale=5,
                            info="Every analysis tab reads this prompt. Shift+Enter redraws the open tab (Enter starts a new "
                                 "line).")
        drop = gr.Checkbox(False, label="Drop unknown characters", scale=1, min_width=180)
    return prompt, drop


def redraw_on(triggers: list, fn, inputs: list, outputs: list) -> None:
    """Redraw a view when any of its controls is let go (a slider's release: mouse up, key up, or its number box
    typed and left): one listener for all of them that, when they change while it runs, runs once more with
    their final values (trigger_mode 'always_last'). Two listeners, or Gradio's default 'once', dropped or
    reordered quick changes: the boxes said layer 17 · head 4 and the chart showed another head."""
    gr.on(triggers, fn, inputs, outputs, api_visibility="private", trigger_mode="always_last", **ANALYSIS)


def run_button(label: str) -> gr.Button:
    return gr.Button(label, variant="primary")


def caption():
    return gr.Markdown(elem_classes=["te-caption"])


# Components with this class are hidden in Simple view (the lesson player's toggle: tabs/lesson_player.py); named
# controls get it from register_control(..., advanced=True), other parts of a tab (a section) directly.
ADVANCED_CLASS = "te-advanced"
RANGE_CLASS = "te-range-"  # + kind; ui.py resizes these sliders whenever the inspected model changes


def model_slider(kind: str, label: str):
    """A slider over the model's layers, heads or positions (kind: see callbacks.models.slider_maxima). Its
    maximum starts at the widest range, which is what API callers are checked against (the browser's copy
    shrinks to the inspected model's range); the callback clamps to the model."""
    value = -1 if kind == "query" else 0
    return RawSlider(value, SLIDER_MAX[kind], value=value, step=1, label=label, elem_classes=[RANGE_CLASS + kind])


STALE = "Not drawn for these inputs yet: press {button}."


def empty_value(component):
    """What an emptied output shows: a table keeps its headers (null would number its columns 0, 1, 2...)."""
    if isinstance(component, gr.Dataframe):
        return {"headers": list(component.headers or []), "data": []}
    return None


def clear_when_changed(inputs: list, outputs: list, button: str, html: bool = False) -> None:
    """When one of inputs changes (typed, set by a lesson step, or a new model), empty outputs (plots and tables
    first, the caption last: Markdown, or HTML when html) and say which button draws them again: a chart never
    stands under inputs it was not drawn for."""
    said = (f"<p><em>{STALE.format(button=f'<strong>{button}</strong>')}</em></p>" if html
            else f"*{STALE.format(button=f'**{button}**')}*")
    js = f"() => {json.dumps([empty_value(output) for output in outputs[:-1]] + [said])}"
    for component in inputs:
        component.change(None, None, outputs, js=js, api_visibility="private", concurrency_limit=None)
