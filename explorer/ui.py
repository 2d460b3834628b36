"""build_app(): the Gradio Blocks with every tab. Components and wiring only; logic lives in callbacks/."""
import importlib
import inspect
import json

import gradio as gr

from explorer.callbacks.reload import detach_session, resume_session  # Gradio reads their signatures: not lazy
from explorer.common.views import DEFAULT_VIEW, VIEWS
from explorer.tabs.binding import bind
from explorer.tabs.class_notice import CSS as CLASS_CSS
from explorer.tabs.class_notice import build_class_notice, wire_class_notice
from explorer.tabs.common import ANALYSIS, RANGE_CLASS, shared_prompt
from explorer.tabs.lazy import callbacks
from explorer.tabs.lesson_player import LESSON_LINKS_IN_PAGE_JS, build_lesson_player, wire_lesson_player
from explorer.tabs.links import (
    drawn_once_loaded,
    link_row,
    selected_view,
    wire_copy_link,
    wire_link_on_load,
    wire_model_name,
)
from explorer.tabs.opening_note import opening_note_box
from explorer.tabs.progress_targets import progress_on_leaves
from explorer.tabs.slider_keys import wire_slider_keys
from explorer.teaching.view_params import CONTROLS, TAB_TRACKER, register_control, register_tabs, reset_controls

slider_maxima = callbacks("models", "slider_maxima")
prompt_for_model = callbacks("task_prompt", "prompt_for_model")
shipped_name = callbacks("links", "shipped_name")
chat_format_for_model = callbacks("sampling", "chat_format_for_model")

CSS = """
.te-caption p, .te-caption li, p.te-caption { font-size: 1.05rem; color: var(--body-text-color); margin: 4px 0 8px; }
/* a view shows its progress on its captions (explorer.tabs.progress_targets): room for the timer in an empty one */
.te-caption:has(.pending) { min-height: 3.5rem; }
/* Gradio 6.31's page titles an error toast with its type, "Error" (gr.Error's title never reaches it); ours refuse
   a request with a sentence (explorer.common.errors.REFUSED), and a student took "Error" for a crash */
.toast-body.error .toast-title { font-size: 0; }
.toast-body.error .toast-title::before { content: "Cannot do that"; font-size: var(--text-lg); }
.toast-body.error .toast-title .toast-count { font-size: var(--text-lg); }
.te-compare { display: flex; gap: 12px; flex-wrap: wrap; }
.te-col { flex: 1 1 220px; min-width: 0; border: 1px solid var(--border-color-primary); border-radius: 8px;
  padding: 8px; }
.te-col-head { font-weight: 600; margin-bottom: 6px; }
.te-gen { white-space: pre-wrap; overflow-wrap: anywhere; /* a long run of one letter wraps too */
  font-family: ui-monospace, monospace; font-size: 0.95rem; margin: 0; }
.te-metrics { margin-top: 6px; font-size: 0.9rem; color: var(--body-text-color-subdued); }
/* the heads report card's headers wrap between words only (Gradio's tables break anywhere: "inductio/n") */
#te-report-card thead span, #te-report-card .header-cell span { word-break: normal; overflow-wrap: normal; }
.te-examples mark { color: #111827; }  /* dark text on the light highlight, in both themes */
/* a highlighted token as tall as its glyph: a line break's ⏎ comes from a fallback font that reaches below the
   code font's line, and an inline highlight's box stops at that font's line */
.te-examples mark, .te-examples b { display: inline-block; line-height: 1.35; }
/* the header while the model line is being worked out (Gradio's status tracker shown): a request that takes over
   1.5 s says so, since a pretrained model's first open takes ~20 s and the old line looked current meanwhile */
#te-model-info:has([data-testid="status-tracker"]:not(.hide))::after {
  content: "Working on it… opening a model for the first time can take up to half a minute.";
  display: block; font-weight: 600; color: var(--body-text-color); opacity: 0;
  animation: te-appear 0.3s ease 1.5s forwards;
}
@keyframes te-appear { to { opacity: 1; } }
/* "Opening SmolLM2-135M ...": pinned to the top of the window, where a student scrolled to the Train tab's Use button
   or the lesson player still sees it */
#te-opening-note { position: fixed; top: 12px; left: 50%; transform: translateX(-50%); z-index: 1000;
  width: min(760px, 92vw); padding: 8px 14px; border-radius: 8px; border: 1px solid var(--border-color-accent);
  background: var(--background-fill-primary); box-shadow: 0 4px 16px rgba(0, 0, 0, 0.18); }
""" + CLASS_CSS


# tabs whose builder returns what a later builder (a parameter of that name) or the page reads, not named controls
GIVES = {"data": "data_inputs", "train": "train_start"}
ADVANCED = {"min_p", "seed"}  # named controls a lesson in simple mode hides
MODEL_INFO_ID = "te-model-info"  # the header's model line


def build_app() -> gr.Blocks:
    reset_controls()
    # delete_cache: every 5 minutes Gradio removes uploads and downloads older than 15 minutes.
    with gr.Blocks(title="Transformer Explorer", delete_cache=(300, 900)) as demo:
        gr.Markdown("# Transformer Explorer\nTrain a tiny GPT and look inside it: every head, the residual "
                    "stream, the embeddings, the FFN neurons and the sampling knobs.")
        model_info = gr.Markdown(elem_id=MODEL_INFO_ID)
        opening = opening_note_box()  # "Opening SmolLM2-135M ...": a pretrained model's first open takes seconds
        notice = build_class_notice()  # what the teacher pushes (explorer.classroom)
        player = build_lesson_player()  # wired below, once every tab has registered its controls
        prompt, drop = shared_prompt()
        link_note, copy, link = link_row()
        lesson = gr.State(None)  # the link's ?lesson= slug (None without one), for the lesson player
        # the browser keeps its session's key, so a reload (or a tab reopened within --resume-ttl) finds its
        # model, data and run again; every other load step runs after this one
        session_key = gr.BrowserState("", storage_key="transformer-explorer-session")
        resumed = demo.load(resume_session, session_key, session_key, api_visibility="private",
                            concurrency_limit=None)
        loaded = gr.State(False)  # the page's load steps have run (tabs.links.drawn_once_loaded)
        views, train_start = _build_tabs(resumed, model_info, opening, prompt, drop, loaded)
        register_control("prompt", prompt)
        register_control("drop_unknown", drop, advanced=True)
        model_name = wire_model_name()
        wire_copy_link(copy, link, model_name)
        applied = wire_link_on_load(resumed, model_info, link_note, lesson, views, opening, loaded)
        wire_lesson_player(player, applied, lesson, model_info, views, opening)
        wire_class_notice(demo, notice, player, model_info, applied, train_start)
        dispatch, inputs, outputs = selected_view(views)
        prompt.submit(dispatch, [TAB_TRACKER[0], *inputs], outputs, api_visibility="private", **ANALYSIS)
        _follow_the_model(demo, model_info, model_name, prompt, CONTROLS["chat_format"].component)
        wire_slider_keys(demo)
        demo.load(None, None, None, js=LESSON_LINKS_IN_PAGE_JS)
        demo.unload(detach_session)
    # a tab or an accordion as a progress target made every later click cost more; a setting needs no spinner
    progress_on_leaves(demo, settings=[c for control in CONTROLS.values() for c in control.components])
    return demo


def _build_tabs(resumed, model_info, opening, prompt, drop, loaded: gr.State):
    """Every view of explorer.common.views in a tab, its controls registered by name; -> ({tab id: (view, inputs,
    outputs)} of the analysis tabs, each drawn when its tab is selected; what the Train tab's Start reads and writes)."""
    views, named = {}, {}
    shared = {"prompt": prompt, "drop": drop, "model_info": model_info, "opening": opening, "resumed": resumed}
    with gr.Tabs(selected=DEFAULT_VIEW, overflow_behavior="wrap") as tabs:  # every tab in view, on two rows if need be
        for spec in VIEWS:
            build, before = tab_builder(spec.id), set(CONTROLS)
            with gr.Tab(spec.label, id=spec.id) as tab:
                built = build(**{name: shared[name] for name in inspect.signature(build).parameters})
            if spec.draws:
                views[spec.id], built = built
                tab.select(*drawn_once_loaded(views[spec.id], loaded), api_visibility="private", **ANALYSIS)
            if spec.id in GIVES:
                shared[GIVES[spec.id]], built = built, {}
            for name, component in (built or {}).items():
                named.setdefault(name, []).append(component)
            check_params(spec, set(built or {}) | (set(CONTROLS) - before))
    tracker = gr.Textbox(DEFAULT_VIEW, visible="hidden", elem_id="selected-tab")
    for tab in tabs.children:  # the tracker follows the selected tab, in the browser only
        tab.select(None, None, tracker, js=f"() => {json.dumps(tab.id)}")
    register_tabs(tabs, tracker)
    for name, (first, *others) in named.items():
        register_control(name, first, advanced=name in ADVANCED, also=others)
    return views, shared["train_start"]


def tab_builder(view_id: str):
    """The builder of a view: build_<id>_tab in explorer/tabs/<id>.py (its parameters name what it reads)."""
    return getattr(importlib.import_module(f"explorer.tabs.{view_id}"), f"build_{view_id}_tab")


def check_params(spec, registered: set) -> None:
    """A tab registers exactly the link parameters its view declares (what links and lessons may set there)."""
    if registered != set(spec.params):
        raise RuntimeError(f"the {spec.label} tab registers the link parameters {sorted(registered)}, but "
                           f"explorer/common/views.py declares {sorted(spec.params)} for {spec.id!r}")


def one_choice_or_range(minimum: float, maximum: float, value=None) -> dict:
    """The update for a slider from minimum to maximum standing at value (moved in range: SmolLM2's head 8 is head 1
    of a 2-head model). Gradio rebuilds a slider from its arguments and refuses minimum == maximum (a 1-layer
    model's layer slider is 0..0): such a slider keeps a range of one step, stands at its only value and cannot be
    moved."""
    if maximum > minimum:
        inside = {} if value is None or minimum <= value <= maximum else {"value": min(max(value, minimum), maximum)}
        return gr.update(maximum=maximum, interactive=True, **inside)
    return gr.update(maximum=minimum + 1, value=minimum, interactive=False)


def _follow_the_model(demo: gr.Blocks, model_info: gr.Markdown, model_name: gr.Textbox, prompt: gr.Textbox,
                      chat: gr.Checkbox) -> None:
    """Whenever the inspected model changes, in one event (each event costs the page a sweep of every component one
    has met): the link's model name; the layer, head and position sliders' ranges; a prompt a task model can read
    (its words '0'..'58' and '=', so every tab draws); chat format unticked for a model without a chat template."""
    sized = [(block, cls[len(RANGE_CLASS):]) for block in demo.blocks.values() if isinstance(block, gr.Slider)
             for cls in (block.elem_classes or []) if cls.startswith(RANGE_CLASS)]
    sliders = [block for block, _ in sized]

    def follow_model(session, prompt_text, chat_format, *values):
        maxima = slider_maxima(session)
        ranges = [one_choice_or_range(block.minimum, maxima[kind], value) for (block, kind), value in zip(sized, values)]
        return [shipped_name(session), prompt_for_model(session, prompt_text),
                chat_format_for_model(session, chat_format), *ranges]

    model_info.change(bind(follow_model), [prompt, chat, *sliders], [model_name, prompt, chat, *sliders],
                      api_visibility="private", concurrency_limit=None, show_progress="hidden")
