"""The lesson player above the tabs: a lesson picker, "Step k of n", the step's text, Back / Next, and a
"Simple view" toggle that hides the controls registered advanced=True.

Built in two parts because a step sets controls of every tab: build_lesson_player() makes the components
where the player is shown (above the tabs), wire_lesson_player() connects them once every tab has
registered its controls."""
import inspect
import itertools
import json
from dataclasses import dataclass

import gradio as gr

from explorer.common.errors import UserError
from explorer.tabs.binding import bind, outputs_of
from explorer.tabs.common import ADVANCED_CLASS, ANALYSIS, HEAVY
from explorer.tabs.lazy import LazyCallback, callbacks
from explorer.tabs.links import chosen_views, selected_view
from explorer.tabs.opening_note import announced
from explorer.teaching import view_params
from explorer.teaching.lessons import FILE_KEY, NO_LESSON, lesson_choices

lesson_for_page, move, open_lesson, opening_for_lesson, step_notes, step_presses = callbacks(
    "lessons", "lesson_for_page", "move", "open_lesson", "opening_for_lesson", "step_notes", "step_presses")
send_answer, set_name = callbacks("classroom", "send_answer", "set_name")

# A lesson's links (`?lesson=slug`, the end's "Next:") open the lesson in this page, as the picker does: no page load
# (a reload of this app costs a laptop 6-10 s of work in the browser), no new tab (Gradio's Markdown opens every link
# in a new tab, and each open tab of the app holds a connection: a student following Next through six lessons met
# Chromium's six connections per host, "Loading..." for over a minute). The address becomes the lesson's link, so a
# reload opens it. A Ctrl/Cmd/Shift-click or a middle click still opens a new tab.
LINKED_LESSON_ID = "te-open-linked-lesson"
LESSON_LINKS_IN_PAGE_JS = """() => {
  document.addEventListener('click', (e) => {
    const a = e.target.closest && e.target.closest('#te-lesson-text a[href^="?lesson="]');
    if (!a || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const slug = new URLSearchParams(a.getAttribute('href').slice(1)).get('lesson');
    const open = document.querySelector('#ID button, button#ID');
    if (!slug || !open) return;  // no player on the page: follow the link
    e.preventDefault();
    e.stopPropagation();
    window.teLinkedLesson = slug;
    const url = new URL(window.location.href);
    url.searchParams.set('lesson', slug);
    window.history.replaceState(window.history.state, '', url);
    open.click();
  }, true);
}""".replace("ID", LINKED_LESSON_ID)
# The picker's value becomes the lesson the link named (then the picker's own steps open it)
LINKED_LESSON_JS = "() => window.teLinkedLesson || ''"
# Back or Next shows the note the open step left for it (the player's `notes`: a pretrained model opens) at the click,
# in the page: a server event of its own cost the page a sweep of every component an event has touched
STEP_NOTE_JS = """(notes) => {
  let note = '';
  try { note = JSON.parse(notes || '{}')[WHICH] || ''; } catch (e) { note = ''; }
  return note ? {__type__: 'update', value: note, visible: true} : undefined;
}"""

# A lesson picked in the player becomes the address's ?lesson= (replaced, not a new history entry), so a reload opens
# the lesson shown, not the one the page was opened with; no lesson, or the --lesson file (which a page without
# ?lesson= opens), takes ?lesson= away. The address's other parameters stay.
LESSON_IN_URL_JS = """(key) => {
  const url = new URL(window.location.href);
  if (key && key !== %s) url.searchParams.set('lesson', key); else url.searchParams.delete('lesson');
  window.history.replaceState(window.history.state, '', url);
  return [];
}""" % json.dumps(FILE_KEY)

# Simple view: a class on <body> and one CSS rule (added here, so the app's stylesheet needs no entry). A
# class rather than visible=False: it hides the controls of tabs the browser has not drawn yet too, and
# costs no server round trip. Live charts redraw on the 'te-simple-view' event without their advanced lines.
SIMPLE_VIEW_JS = """(on) => {
  if (!document.getElementById('te-simple-style')) {
    const style = document.createElement('style');
    style.id = 'te-simple-style';
    style.textContent = '.te-simple .te-advanced { display: none !important; }';
    document.head.appendChild(style);
  }
  document.body.classList.toggle('te-simple', !!on);
  document.dispatchEvent(new Event('te-simple-view'));
  return [];
}"""


@dataclass
class LessonPlayer:
    box: gr.Accordion
    picker: gr.Dropdown
    simple: gr.Checkbox
    heading: gr.Markdown
    counter: gr.Markdown
    text: gr.Markdown
    back: gr.Button
    next: gr.Button
    question: gr.Markdown  # the step's question (hidden without one), answered with choice or free, sent by send
    choice: gr.Radio
    free: gr.Textbox
    send: gr.Button
    sent: gr.Markdown
    name: gr.Textbox  # the name the teacher sees
    state: gr.State  # {"lesson": picker key, "step": index} of the open lesson, or None
    linked: gr.Button  # hidden: a lesson link clicked in the lesson text presses it (LESSON_LINKS_IN_PAGE_JS)
    applied: gr.State  # a new number when a move applied settings: its change redraws the tab (redraw_after)
    pressing: gr.State  # a new number when that redraw is done and the step names buttons: its change presses them
    notes: gr.Textbox  # hidden: what Back and Next say before they move (explorer.callbacks.lessons.step_notes)


def build_lesson_player() -> LessonPlayer:
    """The player's components, in a closed "Lesson" accordion (opened when a lesson starts)."""
    with gr.Accordion("Lesson", open=False) as box:
        with gr.Row(equal_height=True):
            picker = gr.Dropdown(lesson_choices(), value="", label="Open a lesson",
                                 scale=3)
            name = gr.Textbox(label="Your name (your teacher sees it beside your answers)", max_lines=1,
                              max_length=40, scale=2, elem_id="te-student-name")
            simple = gr.Checkbox(False, label="Simple view (hide advanced controls)", scale=1)
        heading = gr.Markdown(elem_id="te-lesson-title")
        counter = gr.Markdown(elem_id="te-lesson-step")
        text = gr.Markdown(NO_LESSON, elem_id="te-lesson-text")
        with gr.Group(elem_id="te-question"):
            question = gr.Markdown(visible=False)
            choice = gr.Radio([], label="Your answer", visible=False, elem_id="te-answer-choice")
            free = gr.Textbox(label="Your answer", lines=2, max_length=500, visible=False, elem_id="te-answer-text")
        with gr.Row():
            send = gr.Button("Send my answer", size="sm", visible=False, elem_id="te-answer-send", scale=0,
                             min_width=180)
            sent = gr.Markdown(elem_id="te-answer-sent")
        with gr.Row():
            back = gr.Button("← Back", interactive=False)
            forward = gr.Button("Next →", variant="primary", interactive=False)
        linked = gr.Button("Open the linked lesson", visible="hidden", elem_id=LINKED_LESSON_ID)
    return LessonPlayer(box, picker, simple, heading, counter, text, back, forward, question, choice, free, send,
                        sent, name, gr.State(None), linked, gr.State(0), gr.State(0),
                        gr.Textbox("", visible="hidden", elem_id="te-step-notes"))


def wire_lesson_player(player: LessonPlayer, page_load, requested: gr.State, model_info: gr.Markdown,
                       views: dict, opening: gr.Markdown) -> list:
    """Connect the player to every registered control. page_load: the event that applied the page's link,
    which put its ?lesson= slug (or None) into requested; views {tab id: (view, inputs, outputs)} redraw the
    selected tab once a step is applied. -> the player's events (page load, picker, Back, Next)."""
    for component in view_params.advanced_components():
        component.elem_classes = [*(component.elem_classes or []), ADVANCED_CLASS]
    p = player
    fields = {**player_fields(p, model_info), "opening": opening}  # a move hides the note itself: one event fewer
    quiet = dict(api_visibility="private", concurrency_limit=None)
    p.simple.change(None, p.simple, None, js=SIMPLE_VIEW_JS, **quiet)
    p.send.click(bind(send_answer), [p.state, p.choice, p.free], p.sent, **quiet)
    for event in (p.name.submit, p.name.blur):
        event(bind(set_name), p.name, p.name, **quiet)
    # a step that opens a pretrained model says so first (opening: the note under the header). Each move runs
    # however many times it is asked ("multiple"; Gradio's default skips a trigger while the page still counts an
    # earlier run of the same event as going: a move it never saw end would leave Next or a link dead for good).
    again = dict(trigger_mode="multiple")
    picked = announced(p.picker.input, opening_for_lesson, p.picker, opening, **again)
    followed = p.linked.click(None, None, p.picker, js=LINKED_LESSON_JS, **quiet, **again)  # a link: as if picked
    followed = announced(followed.then, opening_for_lesson, p.picker, opening, **again)
    back, forward = (button.click(None, p.notes, opening, js=STEP_NOTE_JS.replace("WHICH", repr(key)), **quiet,
                                  **again) for button, key in ((p.back, "back"), (p.next, "next")))
    linked = announced(page_load.then, opening_for_lesson, requested, opening)  # a ?lesson= link's first step
    moves = ((linked, lesson_for_page, requested), (picked, open_lesson, p.picker),
             (followed, open_lesson, p.picker), (back, _back, p.state),
             (forward, _next, p.state))
    events = [before.then(bind(said_in_the_box(fn), fields=fields), given, outputs_of(fields), **quiet, **again)
              for before, fn, given in moves]
    redraw_after(p, views)
    p.picker.input(None, p.picker, None, js=LESSON_IN_URL_JS, **quiet)  # after the move: tests find that one first
    return events


def player_fields(player: LessonPlayer, model_info: gr.Markdown) -> dict:
    """{field: component} of every event that moves the player (explorer.callbacks.lessons names its results so);
    the step's settings go to the named controls (explorer.tabs.binding.outputs_of)."""
    p = player
    return {"state": p.state, "box": p.box, "picker": p.picker, "simple": p.simple, "model_info": model_info,
            "heading": p.heading, "counter": p.counter, "text": p.text, "back": p.back, "next": p.next,
            "question": p.question, "choice": p.choice, "free": p.free, "send": p.send, "sent": p.sent,
            "applied": p.applied, "notes": p.notes}


# Numbers for the player's `applied` and `pressing` States: each new one is a change, and a change starts the next
# event. A chained event (.then) would run after every move, also those that applied nothing (a page with no lesson,
# a refused move), and each event the page runs costs it a sweep of every component an event has touched.
NEW_NUMBER = itertools.count(1)


def redrawn(session, shown: dict, applied: bool) -> dict:
    """A move's result shown, with a new number for the player's `applied` State when it applied a step's or a
    link's settings to the controls (applied), so the selected tab is drawn on them (redraw_after), and the notes
    Back and Next will show when it opened a step (or closed the lesson)."""
    notes = {"notes": step_notes(session, shown["state"])} if "state" in shown else {}
    return {**shown, **notes, "applied": next(NEW_NUMBER)} if applied else {**shown, **notes}


def redraw_after(player: LessonPlayer, views: dict) -> None:
    """When a move has applied settings (player.applied changes), draw the selected tab's view; then, if the open
    step names buttons (`press:`), press them on its settings (player.pressing changes)."""
    dispatch, inputs, redrawn_outputs = selected_view(views)
    buttons = {label: (a.handler, a.inputs, a.outputs) for label, a in view_params.ACTIONS.items()}
    run, button_inputs, pressed = chosen_views(buttons)

    def redraw(request: gr.Request, state, *values):
        presses = next(NEW_NUMBER) if buttons and step_presses(state) else gr.skip()
        return [*dispatch(request, *values), presses]

    def press(request: gr.Request, state, *values):
        return run(request, step_presses(state), *values)

    again = dict(api_visibility="private", trigger_mode="multiple")
    player.applied.change(redraw, [player.state, view_params.TAB_TRACKER[0], *inputs],
                          [*redrawn_outputs, player.pressing], **again, **ANALYSIS)
    player.pressing.change(press, [player.state, *button_inputs], pressed, **again, **HEAVY)


def said_in_the_box(fn):
    """A move of the player whose refusal (a lesson file with a mistake, a model that cannot open, Next with no
    lesson open) stays in the lesson box until the next move, instead of a toast gone in seconds; either way the
    note shown while a pretrained model opens (explorer.tabs.opening_note) hides with the move's answer."""
    def said(session, *args):
        try:
            shown = fn(session, *args)
        except UserError as err:
            shown = {"text": f"**That did not work:** {err}\n\nPick a lesson above, or press Back or Next to try "
                             "again."}
        return {**redrawn(session, shown, applied=bool(shown.get("state"))), "opening": gr.Markdown(visible=False)}
    said.__name__, said.__doc__ = fn.__name__, fn.__doc__
    said.__signature__ = fn.signature() if isinstance(fn, LazyCallback) else inspect.signature(fn)
    return said


def _back(session, state):
    return move(session, state, -1)


def _next(session, state):
    return move(session, state, +1)
