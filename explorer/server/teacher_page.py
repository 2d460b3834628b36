"""What the teacher page asks of the server: the class at a glance, pushes to every student, stopping every run,
a student's model opened read-only, and the answers to lesson questions. Callers (explorer.server.class_routes) have
already checked the teacher's cookie; nothing here is reachable from a student's page or the Gradio API."""
import hashlib
import time
from urllib.parse import parse_qsl, urlsplit

from explorer.classroom.answers import answers_csv, tally
from explorer.classroom.copies import read_only_copy
from explorer.classroom.room import ROOM
from explorer.classroom.roster import display_name, leaderboard, loss_curve, student_row
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.figures.classroom import class_loss_figure
from explorer.teaching.captions_classroom import class_caption

MAX_LINK_CHARS = 4000


def class_view(sessions: list, figure_key: str = "") -> dict:
    """The class of this server's sessions, as class_view_of says."""
    from explorer.state.training_run import slots_text

    now = time.monotonic()
    rows = [student_row(s, now) for s in sessions]
    curves = [c for c in (loss_curve(s) for s in sessions) if c is not None]
    return class_view_of(rows, curves, slots_text(), figure_key)


def class_view_of(rows: list[dict], curves: list[dict], status: str, figure_key: str = "") -> dict:
    """rows (roster.student_row) and curves (roster.loss_curve) of the class, wherever they were read (this
    server's sessions, or students' servers reporting to the hub service) -> {students, leaderboard, figure (JSON
    text, or None when figure_key says the page has it already), figure_key, caption, answers, pushes, slots}."""
    answers, answers_note = ROOM.answers.all()
    key = _curves_key(curves)
    figure = None if key == figure_key or not curves else class_loss_figure(curves).to_json()
    return {"students": rows, "leaderboard": leaderboard(rows), "figure": figure, "figure_key": key,
            "caption": class_caption(curves),
            "answers": answer_groups(answers), "answers_note": answers_note, "slots": status,
            "pushes": [p.public(ROOM.broadcast.epoch) for p in ROOM.broadcast.history()[-5:]][::-1]}


def _curves_key(curves: list[dict]) -> str:
    """Changes whenever a curve gets a point or a name: the page redraws the figure only then."""
    parts = [f"{c['id']}:{c['name']}:{len(c['steps'])}:{c['steps'][-1]}:{len(c['val_steps'])}" for c in curves]
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16] if parts else ""


def all_answers() -> list:
    """Every answer the class gave (ROOM.answers: kept by the class, with --class-db also those from before a
    restart), whatever became of the sessions that gave them."""
    return ROOM.answers.all()[0]


def answer_groups(answers: list) -> list[dict]:
    """[{lesson, step, title, question, choices, correct, tally, rows: [{name, answer, at, right}]}] per question
    answered; correct is the right choice ('' when the question names none), right True/False (None: unchecked)."""
    groups: dict[tuple, list] = {}
    for answer in answers:
        groups.setdefault((answer.lesson, answer.step), []).append(answer)
    out = []
    for (lesson, step), group in groups.items():
        question, title = _question(lesson, step)
        choices = tuple(question.choices) if question is not None else ()
        out.append({"lesson": lesson, "step": step, "title": title,
                    "question": question.text if question is not None else group[-1].question,
                    "choices": list(choices), "correct": question.correct if question is not None else "",
                    "tally": tally(group, choices) if choices else {},
                    "rows": [{"name": a.name or f"#{a.student}", "answer": a.answer, "at": a.at,
                              "right": question.is_right(a.answer) if question is not None else None}
                             for a in group]})
    return out


def _question(lesson: str, step: int):
    """(the step's Question or None, 'Lesson title, step k: title') as the lesson file says now."""
    from explorer.callbacks.lessons import load_lesson

    try:
        parsed = load_lesson(lesson)
        found = parsed.steps[step]
        return found.question, f"{parsed.title}, step {step + 1}: {found.title}"
    except (UserError, IndexError):
        return None, f"{lesson}, step {step + 1}"


def csv_of_answers() -> str:
    questions: dict[tuple, object] = {}  # each lesson step's question, read once for all its answers

    def right(answer):
        key = (answer.lesson, answer.step)
        if key not in questions:
            questions[key] = _question(*key)[0]
        return questions[key].is_right(answer.answer) if questions[key] is not None else None
    return answers_csv(all_answers(), right)


def options() -> dict:
    """What the page's pickers offer: lessons with their step titles, and the presets that fit this server."""
    from explorer.callbacks.lessons import load_lesson
    from explorer.teaching.lessons import lesson_choices

    lessons = []
    for title, key in lesson_choices():
        if key:
            try:
                lessons.append({"key": key, "title": title,
                                "steps": [s.title for s in load_lesson(key).steps]})
            except UserError:
                continue
    return {"lessons": lessons, "presets": presets_offered()}


def presets_offered() -> list[str]:
    """Presets whose model (on a 256-token vocabulary) is within --max-params: a class run everyone can start."""
    from explorer.callbacks.model_size import count_params
    from model_core.training.presets import PRESETS, get_preset

    return [name for name in PRESETS if count_params(get_preset(name).model_config(vocab_size=256)) <= LIMITS.max_params]


# ------------------------------------------------------------------ pushes

def push(body: dict) -> dict:
    """A teacher's push request ({kind, and its fields}) -> what the page says (the room's and the hub's)."""
    kind = body.get("kind")
    if kind == "message":
        return push_message(body.get("text"))
    if kind == "link":
        return push_link(body.get("link"), body.get("text", ""))
    if kind == "step":
        return push_step(body.get("lesson"), body.get("step"))
    if kind == "run":
        return push_run(body.get("preset"))
    raise UserError("Push a message, a link, a lesson step or a class run.")


def push_message(text) -> dict:
    text = _clean_text(text)
    if not text:
        raise UserError("Write a message first.")
    return _sent(ROOM.broadcast.send("message", text))


def push_link(link, note="") -> dict:
    """A link (as 'Copy link to this view' writes it, or just its query) -> pushed with what it opens; a parameter
    the app does not know is refused with the parser's note."""
    from explorer.teaching.view_params import parse_params

    if not isinstance(link, str) or not link.strip():
        raise UserError("Paste a link first (the app's “Copy link to this view” writes one).")
    if len(link) > MAX_LINK_CHARS:
        raise UserError(f"That link is over {MAX_LINK_CHARS:,} characters.")
    link = link.strip()
    query = dict(parse_qsl(urlsplit(link).query if "?" in link or "://" in link else link.lstrip("?"),
                           keep_blank_values=True))
    query = {k: v for k, v in query.items() if not k.startswith("__")}
    values, notes = parse_params(query)
    if notes:
        raise UserError("The link was not pushed: " + "; ".join(notes))
    if "lesson" in values:
        raise UserError("To send a lesson, use “Push a lesson step”.")
    if not values:
        raise UserError("That link names no view (no ?tab=... or other settings).")
    text = _clean_text(note) or "Your teacher shares a view: " + ", ".join(f"{k} {v}" for k, v in query.items())
    return _sent(ROOM.broadcast.send("link", text, query))


def push_step(lesson, step) -> dict:
    from explorer.callbacks.lessons import load_lesson

    parsed = load_lesson(str(lesson))
    try:
        index = int(step)
    except (TypeError, ValueError):
        raise UserError("Pick a step.") from None
    if not 0 <= index < len(parsed.steps):
        raise UserError(f"That lesson has steps 1 to {len(parsed.steps)}.")
    text = f"Your teacher opens “{parsed.title}”, step {index + 1}: {parsed.steps[index].title}."
    return _sent(ROOM.broadcast.send("step", text, lesson=str(lesson), step=index))


def push_run(preset) -> dict:
    """A class run: every student's "Go there" fills the Train tab with the preset and starts their run (as
    training slots allow: --max-trainers)."""
    if preset not in presets_offered():
        raise UserError("Pick one of the presets offered.")
    text = (f"Class run: your teacher starts the “{preset}” preset for everyone. Press Go there to set it up "
            "and start training.")
    return _sent(ROOM.broadcast.send("run", text, {"tab": "train", "preset": preset}))


def _sent(push) -> dict:
    return {"ok": f"Sent to the class (push {push.id}).", "push": push.public(ROOM.broadcast.epoch)}


def _clean_text(text) -> str:
    if not isinstance(text, str):
        return ""
    return "".join(c for c in text if c.isprintable() or c == "\n").strip()[:500]


# ------------------------------------------------------------------ the class's runs and models

def stop_all_runs(sessions: list) -> dict:
    stopped = 0
    for session in sessions:
        if session.workspace.run is not None and session.workspace.run.active:
            session.workspace.stop_training()
            stopped += 1
    return {"ok": f"Stopped {stopped} run{'s' * (stopped != 1)}."}


def open_student_model(sessions: list, student_id) -> dict:
    """A read-only copy of the model the student has open -> {url} that opens it in the teacher's own page."""
    session = next((s for s in sessions if s.member.student_id == student_id), None)
    if session is None:
        raise UserError("That student's session is gone (their page closed and the server released it).")
    with session.lock:
        held = session.inspected.held
        checkpoint = read_only_copy(held)
    name = f"{display_name(session)}'s model, a read-only copy ({session.inspected.name})"
    token = ROOM.copies.offer(checkpoint, name)
    return {"ok": f"Opening {display_name(session)}'s model in your explorer tab.", "url": f"./?open={token}"}
