"""Links that open a view: the query string applied on page load, the 'Copy link to this view' button, and
one event that draws whichever analysis tab is selected (on load, and when the shared prompt is submitted)."""
import json

import gradio as gr

from explorer.common.views import VIEW
from explorer.tabs.binding import bind, by_name, outputs_of
from explorer.tabs.common import ANALYSIS
from explorer.tabs.lazy import callbacks
from explorer.tabs.opening_note import hidden_after
from explorer.teaching import view_params
from explorer.teaching.lessons import page_lesson

apply_link, opening_for_link = callbacks("links", "apply_link", "opening_for_link")

# (tab, model name, *control values) -> the link, also written to the clipboard. SPEC: [name, tab id or null
# (shown in every tab, like the prompt), initial value] per control value; only the selected tab's controls
# and values that differ from a fresh page's go into the link.
COPY_LINK_JS = """
(tab, model, ...values) => {
  const spec = SPEC;
  const params = new URLSearchParams();
  params.set('tab', tab || 'attention');
  if (model) params.set('model', model);
  const seen = new Set();
  spec.forEach(([name, where, initial], i) => {
    if (seen.has(name) || (where !== null && where !== tab)) return;
    seen.add(name);
    const v = values[i];
    if (v === null || v === undefined || JSON.stringify(v) === JSON.stringify(initial)) return;
    params.set(name, Array.isArray(v) ? v.join(',') : String(v));
  });
  const link = window.location.origin + window.location.pathname + '?' + params.toString();
  if (navigator.clipboard) navigator.clipboard.writeText(link).catch(() => {});
  return link;
}
"""


def link_row():
    """-> (note shown when a link had parameters it could not use, copy button, link textbox)."""
    note = gr.Markdown(visible=False, elem_id="link-note")
    with gr.Row():
        copy = gr.Button("Copy link to this view", size="sm", scale=0, min_width=200)
        link = gr.Textbox(label="Link to this view", placeholder="Appears here (and is copied to the clipboard).",
                          max_lines=1, scale=5, elem_id="view-link", buttons=["copy"])
    return note, copy, link


def wire_copy_link(copy: gr.Button, link: gr.Textbox, model_name: gr.Textbox) -> None:
    """The button reads the registered controls in the browser and writes the link; no server call."""
    tabs = view_params.CONTROLS["tab"].component
    valued = [c for c in view_params.components() if c is not tabs and c not in view_params.TAB_TRACKER]
    names = {id(c): name for name, control in view_params.CONTROLS.items() for c in control.components}
    spec = [[names[id(c)], view_params.tab_of(c), view_params.initial_value(c)] for c in valued]
    js = COPY_LINK_JS.replace("SPEC", json.dumps(spec))
    copy.click(None, [view_params.TAB_TRACKER[0], model_name, *valued], link, js=js)


def drawn_once_loaded(view: tuple, loaded: gr.State) -> tuple:
    """A tab's (view, inputs, outputs) for its select event, doing nothing until the page's load steps have run
    (loaded: the page's flag, set by wire_link_on_load). Gradio fires the selected tab's select as the page mounts,
    before its load event: that draw would run on a session not resumed yet, or on the model a ?lesson= link is
    about to set aside (with the link's prompt not applied), and the load's own draw follows anyway."""
    fn, inputs, outputs = view

    def select(request: gr.Request, ready, *values):
        return fn(request, *values) if ready else [gr.skip()] * len(outputs)

    return select, [loaded, *inputs], outputs


def wire_link_on_load(start, model_info, note, lesson: gr.State, views: dict, opening: gr.Markdown,
                      loaded: gr.State):
    """After the page-load event start: apply the link's query (model first; opening: the note shown meanwhile
    when that is a pretrained model's first open), then draw the selected tab's view with it, and set the page's
    loaded flag (see drawn_once_loaded). views {tab id: (view, inputs, outputs)}. -> the last event (further steps
    chain on it)."""
    fields = {"model_info": model_info, "note": note, "lesson": lesson}

    def opening_note(request: gr.Request):
        return bind(opening_for_link)(request, dict(request.query_params or {}))

    def on_load(request: gr.Request):
        summary, notes, values = bind(apply_link)(request, dict(request.query_params or {}))
        shown = {"note": gr.update(value="\n".join(f"- **Link:** {n}" for n in notes), visible=True)} if notes else {}
        return by_name({"model_info": summary, **shown, "lesson": values.get("lesson"), "controls": values}, fields)

    dispatch, inputs, outputs = selected_view(views)

    def draw(request: gr.Request, requested, shown, tab, *values):
        """The selected tab's view, unless a lesson opens on this page (its player draws the step's view); a view
        that cannot draw (the prompt in the box is not one the session's model reads) says why under the link
        row, so the page's later load steps still run."""
        if page_lesson(requested):
            return [True, gr.skip(), *[gr.skip()] * len(outputs)]
        try:
            return [True, gr.skip(), *dispatch(request, tab, *values)]
        except gr.Error as err:
            said = f"{shown}\n" if shown else ""
            label = VIEW[tab].label if tab in VIEW else tab
            return [True, gr.update(value=f"{said}- **The {label} tab could not draw:** {err.message}",
                                    visible=True), *[gr.skip()] * len(outputs)]

    tracker = view_params.TAB_TRACKER[0]
    announced = start.then(opening_note, None, opening, api_visibility="private", concurrency_limit=None)
    applied = hidden_after(announced.then(on_load, None, outputs_of(fields), api_visibility="private", **ANALYSIS),
                           opening)
    return applied.then(draw, [lesson, note, tracker, *inputs], [loaded, note, *outputs], api_visibility="private",
                        **ANALYSIS)


def selected_view(views: dict):
    """-> (handler(request, tab, *inputs), inputs, outputs): one event that runs the view of the selected tab
    (views {tab id: (view, inputs, outputs)}) and leaves every other tab's outputs alone."""
    run, inputs, outputs = chosen_views(views)

    def dispatch(request: gr.Request, tab, *values):
        return run(request, (tab,), *values)

    return dispatch, inputs, outputs


def chosen_views(views: dict):
    """-> (run(request, chosen, *inputs), inputs, outputs): one event that runs the views whose keys are in chosen
    (views {key: (view, inputs, outputs)}), in the order of views, and leaves every other view's outputs alone."""
    inputs = list({id(c): c for _, ins, _ in views.values() for c in ins}.values())  # the prompt once
    outputs = [c for _, _, outs in views.values() for c in outs]
    position = {id(c): i for i, c in enumerate(inputs)}

    def run(request, chosen, *values):
        result = []
        for key, (view, ins, outs) in views.items():
            if key in chosen:
                result += list(view(request, *[values[position[id(c)]] for c in ins]))
            else:
                result += [gr.skip()] * len(outs)
        return result

    return run, inputs, outputs


def wire_model_name() -> gr.Textbox:
    """A hidden box with the shipped model the session inspects ('' otherwise), for links (explorer.ui keeps it
    current with the model)."""
    return gr.Textbox(visible="hidden", elem_id="link-model")
