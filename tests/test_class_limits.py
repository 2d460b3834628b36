"""What one student cannot do to the others in the class (docs/classroom.md): take a classmate's or the teacher's
name, guess the teacher's key in parallel, lose the class's answers when the answers' file is locked or when their
session goes."""
import sqlite3

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from explorer.callbacks.classroom import send_answer, set_name
from explorer.classroom.answer_book import BUSY_NOTE
from explorer.classroom.names import name_key, unique_name
from explorer.classroom.room import ROOM, configure
from explorer.common.errors import UserError
from explorer.server import class_routes as routes
from explorer.server import teacher_page as teacher
from explorer.state.session import REGISTRY

KEY = "the-teachers-key-123"
STEP = {"lesson": "attention-basics", "step": 1}  # a free-text question


@pytest.fixture(scope="module", autouse=True)
def app():
    from explorer.ui import build_app

    return build_app()  # registers the controls that lesson steps name


@pytest.fixture(autouse=True)
def fresh_class():
    configure(KEY)
    yield
    configure()


# ------------------------------------------------------------------ names

@pytest.mark.slow
def test_a_taken_name_gets_a_suffix_whatever_its_case_spacing_or_invisible_characters():
    taken = ["Ana", "Ben (2)"]
    assert unique_name("Ana", taken) == "Ana (2)"
    assert unique_name("  aNA ", taken) != "  aNA " and name_key(unique_name("ana", taken)) == "ana (2)"
    assert unique_name("A\u200bna", taken) == "A\u200bna (2)"  # a zero-width space does not make it another name
    assert unique_name("Ａｎａ", taken) == "Ａｎａ (2)"  # full-width letters read the same (NFKC)
    assert unique_name("Ana", [*taken, "Ana (2)", "ana (3)"]) == "Ana (4)"
    assert unique_name("Ben", taken) == "Ben" and unique_name("", taken) == ""
    assert len(unique_name("x" * 40, ["x" * 40])) == 40


@pytest.mark.slow
@pytest.mark.parametrize("name", ["you (the teacher)", "You  (The Teacher)", "Ana (the teacher)",
                                  "(no name) #1a2b3c4d"])
def test_nobody_can_pass_for_the_teacher_or_a_nameless_row(name):
    with pytest.raises(UserError, match="teacher page marks its own rows"):
        unique_name(name, [])


@pytest.mark.slow
def test_two_students_in_the_room_never_show_the_same_name():
    first, second = REGISTRY.get("names-first"), REGISTRY.get("names-second")
    try:
        assert set_name(first, "Chloé") == "Chloé"
        assert set_name(second, "chloé") == "chloé (2)"
        assert set_name(first, "Chloé") == "Chloé"  # keeping one's own name is no clash
        rows = teacher.class_view([first, second])["students"]
        assert len({row["name"] for row in rows}) == 2
    finally:
        REGISTRY.close("names-first"), REGISTRY.close("names-second")


# ------------------------------------------------------------------ answers outlive sessions and a locked file

def test_answers_outlive_their_session():
    session = REGISTRY.get("answers-gone")
    set_name(session, "Dee")
    send_answer(session, STEP, None, "an h")
    REGISTRY.close("answers-gone")  # released (a closed page, an eviction)
    rows = teacher.class_view([])["answers"][0]["rows"]
    assert [(r["name"], r["answer"]) for r in rows] == [("Dee", "an h")]
    assert "Dee" in teacher.csv_of_answers()


@pytest.mark.slow
def test_a_locked_answers_file_loses_no_answer_and_the_teacher_page_still_answers(tmp_path):
    path = tmp_path / "class.db"
    configure(KEY, str(path))
    other = sqlite3.connect(path)  # another program holds the file locked
    other.execute("BEGIN EXCLUSIVE")
    session = REGISTRY.get("answers-locked")
    try:
        note = send_answer(session, STEP, None, "kept anyway")
        assert "busy" in note and "kept" in note
        view = teacher.class_view([session])
        assert view["answers_note"] == BUSY_NOTE
        assert view["answers"][0]["rows"][0]["answer"] == "kept anyway"
        other.rollback()  # the file is free again: the next look writes what waited
        view = teacher.class_view([session])
        assert view["answers_note"] is None
    finally:
        other.close()
        REGISTRY.close("answers-locked")
    configure(KEY, str(path))  # a restart: the answer is in the file
    assert [a.answer for a in ROOM.answers.all()[0]] == ["kept anyway"]


# ------------------------------------------------------------------ the teacher's key

@pytest.fixture
def client(monkeypatch):
    async def no_wait(_seconds):
        pass
    monkeypatch.setattr(routes.asyncio, "sleep", no_wait)
    inner = Starlette(routes=[Route("/{path:path}", lambda request: PlainTextResponse("the explorer"))])
    with TestClient(routes.ClassRoutes(inner), follow_redirects=False) as test_client:
        yield test_client


def test_one_key_attempt_at_a_time_per_address(client):
    gate = ROOM.gate
    assert gate.begin_attempt("testclient")  # an attempt from this address is still being answered
    for key in ("guess", KEY):  # while it is, another one is refused unread, even the right key
        reply = client.get("/teacher", params={"key": key})
        assert reply.status_code == 429 and "still being checked" in reply.text
    assert gate.begin_attempt("10.0.0.2")  # other addresses are not held up
    gate.end_attempt("10.0.0.2")
    gate.end_attempt("testclient")
    assert client.get("/teacher", params={"key": KEY}).status_code == 303
    assert gate.begin_attempt("testclient")  # every attempt, right or wrong, ends its turn
