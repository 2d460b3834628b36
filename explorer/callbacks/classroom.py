"""A student's side of the class: the name the teacher sees, "Go there" on what the teacher pushed, and answers to
lesson questions (explorer.classroom holds the class; the teacher's side is explorer.server.teacher_page)."""
import time

import gradio as gr

from explorer.callbacks.lessons import load_lesson, open_lesson, opening_model, verdict
from explorer.callbacks.links import apply_link
from explorer.callbacks.train import start_training
from explorer.classroom.answers import Answer, check_answer
from explorer.classroom.hub_link import hub_user
from explorer.classroom.names import LOCK as NAMES_LOCK
from explorer.classroom.names import unique_name
from explorer.classroom.room import ROOM
from explorer.classroom.roster import clean_name
from explorer.common.errors import UserError
from explorer.state.session import REGISTRY, Session


def set_name(session: Session, name: str) -> str:
    """The name the teacher sees for this session ('' to show none); -> the name kept (trimmed, at most 40
    characters, with a suffix when a classmate has it already: explorer.classroom.names)."""
    wanted = clean_name(name)
    with NAMES_LOCK:
        taken = [s.member.display_name for s in REGISTRY.sessions() if s is not session]
        session.member.display_name = unique_name(wanted, taken)
    if session.member.display_name != wanted:
        gr.Info(f"Someone in the class is called {wanted} already, so the teacher sees you as "
                f"{session.member.display_name}.")
    return session.member.display_name


def name_of(session: Session):
    """The name the session kept, for the name box once a (re)loaded page is set up; no change when it kept none,
    so a name typed while the page was still loading is not wiped (the box would then send an empty name)."""
    return session.member.display_name or gr.skip()


def apply_push(session: Session, push_id: str, replace_model: bool = False) -> dict:
    """"Go there" on a push -> the lesson player's fields (explorer.callbacks.lessons) and "ask", a question: a
    lesson step opened, or a link's (or class run's) settings applied, a message changing nothing; "ask" is '' then. A push that would open a
    shipped model in place of the student's own (trained, uploaded) model changes nothing and asks first, unless
    replace_model says they agreed."""
    push = ROOM.broadcast.get(push_id)
    if push is None:
        raise UserError("That notice is too old: the teacher has sent newer ones since.")
    question = "" if replace_model else replacement_question(session, push)
    if question or push.kind == "message":
        return {"ask": question}
    if push.kind == "step":
        return {**open_lesson(session, push.lesson, push.step), "ask": ""}
    summary, notes, values = apply_link(session, push.query)
    return {"model_info": summary, "controls": values, "ask": ""}


def start_class_run(session: Session, starts: bool, question: str, corpus, kind, bpe_vocab, *values):
    """After "Go there": when it was a class run's (starts; question: one asked first, never here), start training
    as Start does, with the Train tab's controls the push has just set. -> (status, poll timer)."""
    if not starts or question:
        return gr.skip(), gr.skip()
    return start_training(session, corpus, kind, bpe_vocab, *values), gr.Timer(active=True)


def pushed_model(session: Session, push) -> str:
    """The shipped model a push opens ('' when it keeps the inspected one): a lesson step's (lessons.opening_model)
    or a link's `model`."""
    if push.kind == "step":
        steps = load_lesson(push.lesson).steps
        return opening_model(session, steps, push.step) if 0 <= push.step < len(steps) else ""
    return push.query.get("model", "") if push.kind == "link" else ""


def replacement_question(session: Session, push) -> str:
    """What to ask before a push replaces the student's own model with a shipped one; '' when nothing of theirs
    would be lost (they inspect a shipped model, or the push keeps the model)."""
    wanted = pushed_model(session, push)
    if not wanted or session.inspected.shared_key is not None:  # an unmodified shipped model: nothing to lose
        return ""
    where = "This lesson step" if push.kind == "step" else "This view"
    return (f"{where} opens the shipped model {wanted} in place of the model you are inspecting now "
            f"({session.inspected.name}), which is kept nowhere else. To keep it, save it first (Train tab: “Save "
            "inspected model as .zip”). Open it anyway, or keep your model?")


NOTHING_SENT = "Nothing sent yet: pick a choice (or type your answer), then press **Send my answer**."


def send_answer(session: Session, state, choice, text) -> str:
    """The answer to the open lesson step's question, kept with the session (and in --class-db) -> a note."""
    if not state:
        raise UserError("Open a lesson first.")
    lesson, step = state["lesson"], state["step"]
    steps = load_lesson(lesson).steps
    question = steps[step].question if 0 <= step < len(steps) else None
    if question is None:
        raise UserError("This step asks no question.")
    given = choice if question.choices else text
    if not (given or "").strip():  # nothing refused: a note in the answer line, not an error toast and badge
        return NOTHING_SENT
    answer = check_answer(question, given)
    member = session.member
    name = member.display_name or hub_user()  # on a hub, the teacher knows the student by their hub name
    kept = Answer(member.student_id, name, lesson, step, question.text, answer, time.time())
    member.answers[(lesson, step)] = kept
    later = "" if ROOM.answers.record(kept) else (" Your teacher's answers file is busy just now: your answer is kept "
                                                  "and written to it as soon as it is free.")
    said = verdict(question, answer)
    if not name:
        return (f"{said} Sent to your teacher. Type your name in the box above, so your teacher knows which answer is "
                "yours." + later).strip()
    return (f"{said} Sent to your teacher as **{name}** ({time.strftime('%H:%M')})."
            + ("" if said else " Change it and send again if you like.") + later).strip()
