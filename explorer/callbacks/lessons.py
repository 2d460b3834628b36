"""Lesson player callbacks: open a lesson, step through it; entering a step applies its settings."""
import json
from pathlib import Path

import gradio as gr

from explorer.callbacks.links import apply_link
from explorer.callbacks.models import opening_note, opening_note_text
from explorer.common import app_state
from explorer.common.controls import DEFAULT_PROMPT
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.state.session import Session
from explorer.teaching import view_params
from explorer.teaching.glossary import first_uses, terms_in, words_note
from explorer.teaching.lesson_claims import models_in_effect
from explorer.teaching.lessons import (
    FILE_KEY,
    NO_LESSON,
    Lesson,
    LessonError,
    lesson_choices,
    lesson_title,
    page_lesson,
    read_lesson,
    shipped_lessons,
)


def load_lesson(key: str) -> Lesson:
    """The lesson for a picker key, checked against the app's controls; UserError naming the bad line."""
    path = app_state.lesson_file if key == FILE_KEY else shipped_lessons().get(key)
    if not path:
        raise UserError(f"There is no lesson {key!r}; choose one of: {', '.join(shipped_lessons()) or 'none'}.")
    try:
        return read_lesson(path, view_params.lesson_validator() if app_state.lesson_checks else None)
    except LessonError as err:
        raise UserError(f"This lesson file has a mistake: {LessonError(err.line, err.problem, Path(path).name)}") from None


# What moving the player returns: {field: value} for the fields of explorer.tabs.lesson_player.LessonPlayer it
# changes (state, box, picker, simple, heading, counter, text, back, next, question, choice, free, send, sent),
# "model_info" (the inspected model's summary) and "controls" (the step's parsed settings); a field left out keeps
# what its component shows (explorer.tabs.binding.by_name).


def open_lesson(session: Session, key: str, index: int = 0) -> dict:
    """Picker, page load or the teacher's push -> the player on step index of lesson key (closed and cleared when
    key is empty)."""
    if not key:
        return {"state": None, "simple": False, "heading": "", "counter": "", "text": NO_LESSON, **_buttons(0, 0),
                **_question_view(session, None, None)}
    lesson = load_lesson(key)
    return _step_view(session, key, lesson, min(max(index, 0), len(lesson.steps) - 1), opening=True)


def move(session: Session, state, delta: int) -> dict:
    """Back (-1) or Next (+1) from the step in state; the step index stays within the lesson."""
    if not state:
        raise UserError("Open a lesson first (the Lesson picker above the tabs).")
    lesson = load_lesson(state["lesson"])
    index = min(max(state["step"] + delta, 0), len(lesson.steps) - 1)
    return _step_view(session, state["lesson"], lesson, index, opening=False)


def opening_for_step(session: Session, state, delta: int):
    """Before Back or Next: the note saying a pretrained model opens, when the step moved to names one (see
    models.opening_note); hidden otherwise."""
    return opening_note(session, _moved_to_model(state, delta))


def step_notes(session: Session, state) -> str:
    """What Back and Next say before they move, as JSON {"back": ..., "next": ...} ('' where nothing): the note that
    a pretrained model opens, when the step moved to names one (opening_for_step). The page shows it at the click
    itself (explorer.tabs.lesson_player), with no event of its own."""
    return json.dumps({key: opening_note_text(session, _moved_to_model(state, delta))
                       for key, delta in (("back", -1), ("next", +1))})


def _moved_to_model(state, delta: int):
    """The model the step delta away from the open one names (None without a lesson open)."""
    return _step_model(state["lesson"], state["step"] + delta) if state else None


def opening_for_lesson(session: Session, key: str):
    """Before the picker opens lesson key on its first step: the same note for the model that step names."""
    return opening_note(session, _step_model(key, 0) if key else None)


def _step_model(key: str, index: int):
    """The model step index (kept within the lesson) of lesson key opens, or None (also for a lesson that fails
    to load: opening it says why)."""
    try:
        steps = load_lesson(key).steps
    except UserError:
        return None
    return steps[min(max(index, 0), len(steps) - 1)].settings.get("model")


def lesson_for_page(session: Session, requested: str) -> dict:
    """Page load: the lesson a `?lesson=slug` link asks for, else the --lesson file, else nothing to change
    (the picker's choices are refreshed either way: a --lesson file is added after the UI is built)."""
    key = page_lesson(requested)
    if key:
        return open_lesson(session, key)
    return {"picker": gr.Dropdown(choices=lesson_choices())}


def _step_view(session: Session, key: str, lesson: Lesson, index: int, opening: bool) -> dict:
    """The player on one step, its settings applied as a link's are (a named model first, layer and head fitted to
    it); opening: also the accordion opened, the picker on the lesson and the lesson's simple view."""
    step = lesson.steps[index]
    before = (model_for_opening(session, lesson.steps, index) + run_going_note(session)) if opening else []
    summary, notes, values = apply_link(session, settings_in_effect(lesson.steps, index) if opening else step.settings)
    if opening:  # what an earlier lesson or the student left on the lesson's tabs does not carry in
        values = {**view_params.defaults_on(lesson_tabs(lesson.steps)), **values}
    notes = before + notes
    opened = {"box": gr.Accordion(open=True), "picker": gr.Dropdown(choices=lesson_choices(), value=key),
              "simple": lesson.simple} if opening else {}
    intro = f"{lesson.intro}\n\n" if index == 0 and lesson.intro else ""
    notes = "".join(f"\n\n*Note: {note}*" for note in notes)  # e.g. a layer this model does not have
    state = {"lesson": key, "step": index}
    words = words_note(terms_in(step_texts(lesson)[index]) if opening and index else new_words(lesson)[index])
    end = f"\n\n---\n{end_of_lesson(lesson)}" if index == len(lesson.steps) - 1 else ""
    return {"state": state, **opened, "model_info": summary, "heading": f"### {lesson.title}",
            "counter": f"**Step {index + 1} of {len(lesson.steps)}: {step.title}**",
            "text": intro + step.text + (f"\n\n{words}" if words else "") + notes + end,
            **_buttons(index, len(lesson.steps)), **_question_view(session, state, step.question), "controls": values}


def settings_in_effect(steps, index: int) -> dict:
    """The settings a lesson opened at step index starts from: those of its steps up to index, a later step's value
    of a name winning (a prompt set at step 1 still holds at step 3); a model only as step index names it (an
    earlier step's is chosen by opening_model)."""
    merged = {}
    for step in steps[:index]:
        merged.update({name: text for name, text in step.settings.items() if name != "model"})
    return {**merged, **steps[index].settings}


def lesson_tabs(steps) -> set:
    """The tab ids a lesson's steps show."""
    return {step.settings["tab"] for step in steps if "tab" in step.settings}


def opening_model(session: Session, steps, index: int) -> str:
    """The shipped model opening a lesson at step index opens ('' when the session keeps what it inspects): the one
    the step names, else the one its steps are written for there (models_in_effect: named by an earlier step, else
    the app's default; the one its claims are measured on) when the session inspects another shipped model, or a
    model of the student's own that cannot read the lesson's prompt there (a task model, say)."""
    named = steps[index].settings.get("model")
    if named:
        return named
    wanted, key = models_in_effect(steps)[index], session.inspected.shared_key or ""
    if key == f"shipped:{wanted}":
        return ""
    return wanted if key.startswith("shipped:") or not reads(session, prompt_in_effect(steps, index)) else ""


def model_for_opening(session: Session, steps, index: int) -> list[str]:
    """A lesson opened at step index (a link, the picker, a teacher's push) on whatever the session holds: the
    model opening_model names is opened (a model the step names: by apply_link). -> a note when the student's own
    model was set aside."""
    wanted = "" if "model" in steps[index].settings else opening_model(session, steps, index)
    if not wanted:
        return []
    own, name = not (session.inspected.shared_key or "").startswith("shipped:"), session.inspected.name
    session.inspected.use_shipped(wanted)
    return [f"The model you had open ({name}) cannot read this step's text, so the lesson opened the shipped "
            f"{wanted} model in its place."] if own else []


def prompt_in_effect(steps, index: int) -> str:
    """The prompt the lesson sets at step index or before it, else the page's default one."""
    named = settings_in_effect(steps, index).get("prompt")
    return view_params.parse_params({"prompt": named})[0].get("prompt", DEFAULT_PROMPT) if named is not None else DEFAULT_PROMPT


def reads(session: Session, prompt: str) -> bool:
    """Whether the inspected model's tokenizer knows every piece of the prompt."""
    try:
        session.inspected.tokenizer.encode(prompt)
    except Exception:  # noqa: BLE001 - an unknown token, or no model at all: either way it cannot read it
        return False
    return True


def run_going_note(session: Session) -> list[str]:
    """When the session's training run is still going as a lesson opens: what to do before the lesson's own."""
    run = session.workspace.run
    if run is None or not run.active or run.progress.requested not in ("running", "paused"):
        return []  # a stopped run is ending: Start works once it has
    state = (f"is paused (the server stops a run paused for {LIMITS.run_ttl_seconds / 60:g} minutes)"
             if run.progress.requested == "paused" else "is still going")
    return [f"Your earlier training run {state}, at step {run.progress.step:,}. Before a step that says "
            "**Start**, press **Stop** on the Train tab: one run per student at a time (its curves stay on the "
            "charts, faded, beside the new run's)."]


def new_words(lesson: Lesson) -> list[list[str]]:
    """For each step, the glossary words the lesson uses there for the first time: explained under the step (a
    step opened directly, by a link or a teacher's push, explains every word it uses: terms_in)."""
    return first_uses(step_texts(lesson))


def step_texts(lesson: Lesson) -> list[str]:
    """Each step's words: its title, text and question (the intro counts as step 1's)."""
    texts = [" ".join([step.title, step.text, step.question.text if step.question else ""]) for step in lesson.steps]
    texts[0] = f"{lesson.intro} {texts[0]}"
    return texts


def end_of_lesson(lesson: Lesson) -> str:
    """Markdown under the last step: the end of the lesson, what it taught, and the lessons to go on with."""
    text = "**End of the lesson.**" + (f" {lesson.learned}" if lesson.learned else "")
    lessons = shipped_lessons()
    links = [f"[{lesson_title(lessons[slug])}](?lesson={slug})" for slug in lesson.next if slug in lessons]
    following = f"Next: {' · '.join(links)}, or pick" if links else "Pick"
    return f"{text}\n\n{following} another lesson in **Open a lesson** above."


def step_presses(state) -> tuple:
    """The labels of the buttons the open lesson step presses once its settings are applied (none without one)."""
    if not state:
        return ()
    steps = load_lesson(state["lesson"]).steps
    return steps[state["step"]].press if 0 <= state["step"] < len(steps) else ()


def _question_view(session: Session, state, question) -> dict:
    """The question box of a step: its question, the choices (or a text box) with the answer this session sent
    already, the Send button and a note; all hidden for a step without a question."""
    if question is None:
        return {"question": gr.Markdown("", visible=False), "choice": gr.Radio(visible=False, value=None),
                "free": gr.Textbox(visible=False, value=""), "send": gr.Button(visible=False), "sent": ""}
    kept = session.member.answers.get((state["lesson"], state["step"]))
    answer = kept.answer if kept else None
    sent = f"{verdict(question, kept.answer)} You sent **{kept.answer}** to your teacher.".strip() if kept else ""
    choices = list(question.choices)
    return {"question": gr.Markdown(f"**Question:** {question.text}", visible=True),
            "choice": gr.Radio(choices=choices, value=answer if answer in choices else None, visible=bool(choices)),
            "free": gr.Textbox(value="" if choices else answer or "", visible=not choices),
            "send": gr.Button(visible=True), "sent": sent}


def _buttons(index: int, n_steps: int) -> dict:
    """Back and Next, each usable only when there is a step to go to."""
    return {"back": gr.Button(interactive=index > 0), "next": gr.Button(interactive=index < n_steps - 1)}


def verdict(question, answer: str) -> str:
    """What the player says about a sent answer: 'Right.', 'Not quite: <hint>' (the student may try again), or
    nothing when the question has no answer to check."""
    right = question.is_right(answer)
    if right is None:
        return ""
    if right:
        return "**Right.**"
    return f"**Not quite:** {question.hint or 'look at the chart again.'} Pick another answer and send it again."
