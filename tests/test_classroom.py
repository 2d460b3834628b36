"""The class behind the teacher page, in-process: the key gate, pushes, read-only copies, the class's rows,
leaderboard and loss-curve figure, pushes checked before they go, a student's "Go there" and answers."""
import json
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest
import torch

from explorer.callbacks.classroom import NOTHING_SENT, apply_push, send_answer, set_name, start_class_run
from explorer.classroom.broadcast import KEPT, RECENT, Broadcast
from explorer.classroom.copies import TOKEN_SECONDS, PendingCopies
from explorer.classroom.gate import MAX_DELAY, TeacherGate
from explorer.classroom.room import ROOM, configure
from explorer.classroom.roster import clean_name, leaderboard, student_row
from explorer.common.errors import UserError
from explorer.figures.classroom import class_loss_figure
from explorer.server import teacher_page as teacher
from explorer.state.session import new_session
from model_core.data.tokenization import CharTokenizer
from model_core.training.run_protocol import Command
from tests.helpers import tiny_model


@pytest.fixture(scope="module", autouse=True)
def app():
    from explorer.ui import build_app

    return build_app()  # registers the controls links and lesson steps name


@pytest.fixture(autouse=True)
def fresh_class():
    configure("a-teacher-key")
    yield
    configure()


class FakeRun:
    """What the roster reads of a TrainingRun (a real one needs a child process): its record's history and evals."""

    def __init__(self, losses, val=(), state="running", corpus="shakespeare", model=None):
        history = [{"step": i + 1, "loss": x, "tokens_per_sec": 1000.0 + i} for i, x in enumerate(losses)]
        evals = [{"step": s, "val_loss": v} for s, v in val]
        self.progress = SimpleNamespace(history=history, evals=evals, step=len(losses), model=model or tiny_model(),
                                        cfg=SimpleNamespace(max_steps=1000), tokenizer=CharTokenizer("abcdefghijk"),
                                        state=state)
        self.corpus, self.active, self.stopped = corpus, state == "running", False

    def control(self, command):
        self.stopped = command == Command.STOP
        self.active = False


def student(name, run=None):
    session = new_session()
    session.member.display_name, session.workspace.run = name, run
    return session


# ------------------------------------------------------------------ the key

@pytest.mark.slow
def test_only_the_key_opens_the_gate_and_wrong_keys_wait_longer_each_time():
    gate = TeacherGate("correct horse battery")
    assert gate.key_matches("correct horse battery")
    for wrong in ("correct horse batter", "", None, 42, "x" * 10_000):
        assert not gate.key_matches(wrong)
    assert gate.cookie_matches(gate.cookie_value) and not gate.cookie_matches(gate.cookie_value[:-1] + "0")
    assert gate.cookie_value != gate.key and "correct" not in gate.cookie_value
    delays = [gate.delay_after_failure("10.0.0.9", now=float(i)) for i in range(8)]
    assert delays == sorted(delays) and delays[0] < delays[3] and delays[-1] == MAX_DELAY
    assert gate.delay_after_failure("10.0.0.10", now=8.0) == delays[0]  # another address is not slowed
    gate.forgive("10.0.0.9")
    assert gate.delay_after_failure("10.0.0.9", now=9.0) == delays[0]
    assert TeacherGate().key != TeacherGate().key  # generated keys differ


# ------------------------------------------------------------------ pushes and copies

@pytest.mark.slow
def test_broadcast_numbers_pushes_and_keeps_the_newest():
    broadcast = Broadcast()
    assert broadcast.latest() is None
    pushes = [broadcast.send("message", f"m{i}") for i in range(KEPT + 5)]
    assert [p.id for p in pushes] == list(range(1, KEPT + 6))
    assert broadcast.latest() == pushes[-1] and broadcast.get(str(pushes[-1].id)) == pushes[-1]
    assert broadcast.get(1) is None and len(broadcast.history()) == KEPT
    assert broadcast.recent() == pushes[-RECENT:]  # what every page's poll brings, oldest first
    with pytest.raises(ValueError):
        broadcast.send("shell", "x")
    assert Broadcast().epoch != broadcast.epoch


@pytest.mark.slow
def test_pushes_are_checked_before_they_go():
    sent = teacher.push_link("http://server:7860/?tab=attention&layer=0&head=1&__theme=dark", "look at this")
    assert sent["push"]["query"] == {"tab": "attention", "layer": "0", "head": "1"}
    assert sent["push"]["text"] == "look at this"
    for bad, says in (("?tab=attention&layr=0", "did you mean layer"), ("", "Paste a link"),
                      ("?lesson=attention-basics", "lesson step"), ("?" + "a" * 5000, "over")):
        with pytest.raises(UserError, match=says):
            teacher.push_link(bad)
    with pytest.raises(UserError, match="steps 1 to 7"):
        teacher.push_step("attention-basics", 7)
    with pytest.raises(UserError, match="no lesson"):
        teacher.push_step("no-such-lesson", 0)
    with pytest.raises(UserError, match="presets offered"):
        teacher.push_run("not-a-preset")
    with pytest.raises(UserError, match="message"):
        teacher.push_message("  \n ")
    assert teacher.push_run("classroom")["push"]["query"] == {"tab": "train", "preset": "classroom"}
    assert teacher.push_message("Pens\x00 down\x1b")["push"]["text"] == "Pens down"
    assert ROOM.broadcast.latest().kind == "message"


@pytest.mark.slow
def test_a_copy_token_works_once_and_expires():
    clock = SimpleNamespace(now=1000.0)
    copies = PendingCopies(clock=lambda: clock.now)
    token = copies.offer("checkpoint", "Ana's model")
    assert copies.take("guess") is None
    assert copies.take(token) == ("checkpoint", "Ana's model") and copies.take(token) is None
    kept, old = copies.offer("kept", "x"), copies.offer("old", "y")
    clock.now += TOKEN_SECONDS - 1
    assert copies.take(kept) == ("kept", "x")
    clock.now += 2
    assert copies.take(old) is None


@pytest.mark.slow
def test_the_teacher_opens_a_copy_the_student_never_sees_change():
    ana, own = student("Ana"), student("")
    ana.inspected.use(ana.inspected.checkpoint, "Ana's trained model")
    before = {k: v.clone() for k, v in ana.inspected.model.state_dict().items()}
    url = teacher.open_student_model([ana, own], ana.member.student_id)["url"]
    token = url.split("open=")[1]
    from explorer.callbacks.links import apply_link

    summary, notes, _ = apply_link(own, {"open": token})
    assert notes == [] and "Ana's model, a read-only copy" in summary and own.member.teacher
    with torch.no_grad():
        for p in own.inspected.model.parameters():
            p.zero_()  # the teacher's experiments reach only the copy
    assert all(torch.equal(v, ana.inspected.model.state_dict()[k]) for k, v in before.items())
    assert not any(p.requires_grad for p in own.inspected.model.parameters())
    _, notes, _ = apply_link(own, {"open": token})  # used once
    assert "used already or has expired" in notes[0]
    with pytest.raises(UserError, match="gone"):
        teacher.open_student_model([own], "nobody")


# ------------------------------------------------------------------ the class at a glance

def test_rows_leaderboard_and_curves_of_a_class():
    ana = student("Ana", FakeRun([4.0, 3.0, 2.5], val=[(3, 2.6)]))
    ben = student("Ben", FakeRun([4.0, 3.5], val=[(2, 2.2)], state="finished"))
    other = student("Cy", FakeRun([5.0, 4.0], val=[(2, 1.5)], corpus="names.txt"))
    idle = student("")  # on the shipped model, never trained
    for s in (ana, ben, other):
        s.inspected.shared_key = None
    view = teacher.class_view([ana, ben, other, idle])
    rows = {r["name"]: r for r in view["students"]}
    assert rows["Ana"]["run"]["state"] == "running" and rows["Ana"]["run"]["step"] == 3
    assert rows["Ana"]["model"]["val_loss"] == pytest.approx(2.6) and rows["Ana"]["run"]["tokens_per_sec"]
    assert rows["Ben"]["run"]["tokens_per_sec"] is None  # not running: no speed to show
    assert rows[f"(no name) #{idle.member.student_id}"]["run"] is None
    boards = {b["corpus"]: [r["name"] for r in b["rows"]] for b in view["leaderboard"]}
    assert boards == {"shakespeare, char tokens (11)": ["Ben", "Ana"], "names.txt, char tokens (11)": ["Cy"]}
    assert [r["val_step"] for b in view["leaderboard"] for r in b["rows"]] == [2, 2, 3]  # when each was measured
    figure = json.loads(view["figure"])
    names = [a["text"] for a in figure["layout"]["annotations"]]
    assert names == ["<b>Ana</b>", "<b>Ben</b>", "<b>Cy</b>"]
    assert figure["layout"]["xaxis2"]["matches"] == "x" and figure["layout"]["yaxis3"]["matches"] == "y"
    again = teacher.class_view([ana, ben, other, idle], figure_key=view["figure_key"])
    assert again["figure"] is None and again["figure_key"] == view["figure_key"]  # nothing new: not resent
    ana.workspace.run.progress.history.append({"step": 4, "loss": 2.4, "tokens_per_sec": 1.0})
    assert teacher.class_view([ana, ben, other, idle], view["figure_key"])["figure"] is not None


def test_a_loss_reported_by_an_uploaded_file_never_ranks_above_a_measured_one():
    from model_core.checkpoints.checkpoint import Checkpoint

    ana = student("Ana", FakeRun([4.0, 3.0, 2.5], val=[(0, 4.2), (3, 2.6)]))
    ana.inspected.shared_key = None
    eve = student("Eve")  # uploads a .zip whose evals claim a loss nobody reaches on this text
    claim = Checkpoint(tiny_model(), CharTokenizer("abcdefghijk"), evals=[{"step": 9000, "val_loss": 0.01}],
                       corpus="shakespeare")
    eve.inspected.use(claim, "uploaded best.zip")
    board = teacher.class_view([eve, ana])["leaderboard"]
    assert [(r["name"], r["val_source"], r["val_step"]) for r in board[0]["rows"]] == [
        ("Ana", "measured", 3), ("Eve", "file", 9000)]  # Ana's latest evaluation, not her step-0 one
    page = (Path(teacher.__file__).parents[1] / "assets" / "teacher" / "page.html").read_text()
    assert "reported by the file" in page  # the page says whose loss was measured where


def test_loss_figure_cells_share_axes_and_label_only_the_outer_ticks():
    curves = [{"name": f"<s{i}>", "steps": [1, 2], "loss": [3.0, 2.0], "val_steps": [], "val_loss": []}
              for i in range(7)]
    layout = class_loss_figure(curves, columns=3).to_plotly_json()["layout"]
    x_ticks = [layout["xaxis" + ("" if i == 0 else str(i + 1))]["showticklabels"] for i in range(7)]
    y_ticks = [layout["yaxis" + ("" if i == 0 else str(i + 1))]["showticklabels"] for i in range(7)]
    assert x_ticks == [False, False, False, False, True, True, True]  # no cell below cells 4, 5, 6
    assert y_ticks == [True, False, False, True, False, False, True]
    assert layout["annotations"][0]["text"] == "<b>&lt;s0&gt;</b>"  # a name is text, never markup
    domains = [layout["yaxis" + ("" if i == 0 else str(i + 1))]["domain"] for i in (0, 3, 6)]
    assert domains[0][0] > domains[1][1] > domains[1][0] > domains[2][1]  # rows top to bottom, not overlapping


def test_student_rows_name_nobody_elses_secret_and_leaderboard_skips_shipped_models():
    session = student("Ana")
    row = student_row(session)
    assert session.member.student_id in json.dumps(row)
    assert all(secret not in json.dumps(row) for secret in ("shared_key", "lock"))
    assert leaderboard([row]) == []  # the shipped model: not the student's own
    assert clean_name("  Ana\n\x07 María  " + "x" * 60) == ("Ana María " + "x" * 60)[:40]
    assert clean_name(None) == ""


def test_stop_all_runs_stops_every_active_run():
    runs = [FakeRun([3.0]), FakeRun([3.0]), FakeRun([3.0], state="finished")]
    result = teacher.stop_all_runs([student(n, r) for n, r in zip("abc", runs)] + [student("d")])
    assert result["ok"] == "Stopped 2 runs." and [r.stopped for r in runs] == [True, True, False]


# ------------------------------------------------------------------ a student's side

def test_go_there_starts_no_run_unless_the_push_is_a_class_run_and_nothing_is_asked():
    session = new_session()
    assert start_class_run(session, False, "", "shakespeare", "char", 512) == (gr.skip(), gr.skip())
    assert start_class_run(session, True, "Open it anyway?", "shakespeare", "char", 512) == (gr.skip(), gr.skip())
    assert session.workspace.run is None


def test_go_there_opens_the_pushed_step_and_applies_a_pushed_link():
    session = new_session()
    pushed = teacher.push_step("attention-basics", 2)["push"]
    outputs = apply_push(session, str(pushed["id"]))
    assert outputs["state"] == {"lesson": "attention-basics", "step": 2}
    assert "Step 3 of 7" in outputs["counter"] and outputs["ask"] == ""
    link = teacher.push_link("?tab=residual&layer=1")["push"]
    outputs = apply_push(session, str(link["id"]))
    assert outputs["controls"] == {"tab": "residual", "layer": 1} and "state" not in outputs  # the player stays
    assert outputs["ask"] == ""  # nothing to ask: the session inspects a shipped model
    with pytest.raises(UserError, match="too old"):
        apply_push(session, "999")


def test_a_pushed_step_asks_before_it_replaces_the_students_own_model():
    """"Go there" on a step that names a shipped model silently swapped a student's trained model for it."""
    from model_core.checkpoints.checkpoint import Checkpoint

    session = new_session()
    own = Checkpoint(tiny_model(), CharTokenizer("abcdefghijk"))
    session.inspected.use(own, "trained on my poems (400 steps)")
    step = str(teacher.push_step("attention-basics", 0)["push"]["id"])  # the step names model: shakespeare
    outputs = apply_push(session, step)
    assert ("opens the shipped model shakespeare in place of the model you are inspecting now (trained on my poems "
            "(400 steps)), which is kept nowhere else") in outputs["ask"]
    assert list(outputs) == ["ask"]  # the player, the model and the controls stay as they were
    assert session.inspected.held is own and session.inspected.name == "trained on my poems (400 steps)"
    view = str(teacher.push_link("?tab=attention&model=first-names&layer=0")["push"]["id"])
    assert apply_push(session, view)["ask"].startswith("This view opens the shipped model first-names")
    no_model = str(teacher.push_link("?tab=residual&layer=1")["push"]["id"])
    assert apply_push(session, no_model)["ask"] == "" and session.inspected.held is own  # the same model: no question
    outputs = apply_push(session, step, replace_model=True)  # "Open it anyway"
    assert outputs["ask"] == "" and outputs["state"] == {"lesson": "attention-basics", "step": 0}
    assert session.inspected.name == "shakespeare" and session.inspected.held is not own


def test_answers_are_checked_kept_with_the_session_and_replaced():
    session = new_session()
    state = {"lesson": "attention-basics", "step": 0}
    with pytest.raises(UserError):
        send_answer(session, state, "not one of the choices", "")
    for nothing in (None, "", "  "):  # nothing chosen yet: a note in the answer line, nothing kept
        assert send_answer(session, state, nothing, "typed in the hidden box") == NOTHING_SENT
    assert ("attention-basics", 0) not in session.member.answers
    wrong = send_answer(session, state, "on the diagonal (the character itself)", "")
    assert wrong.startswith("**Not quite:**") and "Type your name" in wrong  # kept and sent, wrong or not
    set_name(session, "  Ana  ")
    assert send_answer(session, state, "just left of the diagonal", "").startswith(
        "**Right.** Sent to your teacher as **Ana**")
    kept = session.member.answers[("attention-basics", 0)]
    assert (kept.name, kept.answer, kept.student) == ("Ana", "just left of the diagonal", session.member.student_id)
    groups = teacher.class_view([session])["answers"]
    assert groups[0]["tally"] == {"on the diagonal (the character itself)": 0, "just left of the diagonal": 1}
    with pytest.raises(UserError, match="Open a lesson"):
        send_answer(session, None, "x", "")


def test_answers_go_to_the_class_file_and_survive_a_restart(tmp_path):
    path = tmp_path / "class.db"
    configure("a-teacher-key", str(path))
    session = new_session()
    set_name(session, "Ben")
    send_answer(session, {"lesson": "attention-basics", "step": 1}, None, "probably an 't'")
    configure("a-teacher-key", str(path))  # the server restarts: no session, the file remains
    csv_text = teacher.csv_of_answers()
    assert "Ben" in csv_text and "probably an 't'" in csv_text


def test_the_name_box_is_refilled_only_with_a_kept_name():
    """A page's load fills the name box with the name its session kept; a new session keeps none and must not
    overwrite what its student typed meanwhile (that wiped a name in a loaded browser test)."""
    from explorer.callbacks.classroom import name_of

    session = new_session()
    assert isinstance(name_of(session), type(gr.skip()))
    set_name(session, "Chloé")
    assert name_of(session) == "Chloé"
