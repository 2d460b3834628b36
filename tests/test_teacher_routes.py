"""Who can reach the teacher page: the routes in-process (Starlette's test client around class_routes)
and the launched app (a student's Gradio API has none of the teacher's actions)."""
import json

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from explorer.classroom.gate import COOKIE
from explorer.classroom.room import configure
from explorer.server import class_routes as routes

KEY = "the-teachers-key-123"
TEACHER_PATHS = ["/teacher", "/teacher/api/class", "/teacher/api/options", "/teacher/api/answers.csv",
                 "/teacher/api/nothing", "/teacher/x/../api/class"]


@pytest.fixture
def client(monkeypatch):
    configure(KEY)
    waits = []

    async def no_wait(seconds):
        waits.append(seconds)
    monkeypatch.setattr(routes.asyncio, "sleep", no_wait)
    inner = Starlette(routes=[Route("/{path:path}", lambda request: PlainTextResponse("the explorer"))])
    with TestClient(routes.ClassRoutes(inner), follow_redirects=False) as test_client:
        test_client.waits = waits
        yield test_client
    configure()


def signed_in(client):
    reply = client.get("/teacher", params={"key": KEY})
    assert reply.status_code == 303 and reply.headers["location"] == "/teacher"
    cookie = reply.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/teacher" in cookie and KEY not in cookie
    return client


def test_without_the_key_every_teacher_path_is_403_with_a_way_in(client):
    for path in TEACHER_PATHS:
        reply = client.get(path)
        assert reply.status_code == 403, path
        assert "needs its key" in reply.text and "--teacher-key" in reply.text
    assert client.post("/teacher/api/push", json={"kind": "message", "text": "x"},
                       headers={"X-Teacher-Page": "1"}).status_code == 403
    client.cookies.set(COOKIE, "0" * 64)  # a made-up cookie
    assert client.get("/teacher/api/class").status_code == 403
    assert client.get("/").text == "the explorer"  # every other path is the app's


def test_wrong_keys_are_refused_more_and_more_slowly(client):
    for _ in range(4):
        assert client.get("/teacher", params={"key": "guess"}).status_code == 403
    assert client.waits == sorted(client.waits) and client.waits[-1] > client.waits[0] > 0
    signed_in(client)
    assert client.get("/teacher").status_code == 200


def test_the_key_opens_the_page_and_its_requests(client):
    signed_in(client)
    page = client.get("/teacher")
    assert page.status_code == 200 and "gradio_api/file=" in page.text and "PLOTLY_SRC" not in page.text
    assert page.headers["cache-control"] == "no-store"
    view = client.get("/teacher/api/class").json()
    assert set(view) >= {"students", "leaderboard", "figure", "answers", "slots", "pushes"}
    assert client.get("/teacher/api/nothing").status_code == 404
    assert client.get("/teacher/api/push").status_code == 404  # a push is a POST
    sent = client.post("/teacher/api/push", json={"kind": "message", "text": "Pens down"},
                       headers={"X-Teacher-Page": "1"})
    assert sent.status_code == 200 and sent.json()["push"]["text"] == "Pens down"
    client.post("/teacher/api/push", json={"kind": "message", "text": "Eyes up"}, headers={"X-Teacher-Page": "1"})
    latest = client.get("/class/latest").json()
    assert latest["push"]["text"] == "Eyes up" and latest["epoch"]
    texts = [p["text"] for p in latest["pushes"]]  # the newest few, oldest first: an unread one is never lost
    assert texts[-2:] == ["Pens down", "Eyes up"] and [p["id"] for p in latest["pushes"]] == sorted(
        p["id"] for p in latest["pushes"])


def test_teacher_requests_are_bounded_and_refused_with_a_sentence(client):
    signed_in(client)
    header = {"X-Teacher-Page": "1"}
    cases = [({}, b'{"kind": "message", "text": "x"}', "from the teacher page"),  # a plain form cannot send it
             (header, b"x" * 20_000, "over 16,000 bytes"), (header, b"{not json", "not JSON"),
             (header, b"[1, 2]", "not a JSON object"), (header, b'{"kind": "format-disk"}', "Push a message"),
             (header, json.dumps({"kind": "step", "lesson": "../../etc/passwd", "step": 0}).encode(), "no lesson")]
    for headers, body, says in cases:
        reply = client.post("/teacher/api/push", content=body, headers=headers)
        assert reply.status_code == 400 and says in reply.json()["error"], (body[:40], reply.text)


def test_students_pages_and_api_have_no_way_to_the_teacher(app_url):
    """The shared launched app: its teacher key was generated and printed, never shown to a page."""
    base = app_url.rstrip("/")
    for path in TEACHER_PATHS:
        assert httpx.get(base + path).status_code == 403, path
    info = httpx.get(base + "/gradio_api/info").json()
    endpoints = " ".join(info["named_endpoints"]) + " ".join(map(str, info.get("unnamed_endpoints", {})))
    # the teacher's actions (explorer.server.teacher_page) are not Gradio functions under any name; a student's own
    # (apply_push, send_answer, set_name) act on the caller's session only
    teacher_names = ("push", "stop_all", "open", "class", "answers", "teacher", "class_view", "push_message",
                     "push_link", "push_step", "push_run", "stop_all_runs", "open_student_model", "csv_of_answers")
    for name in teacher_names:
        assert f"/{name}" not in endpoints.split(), name
        assert httpx.post(f"{base}/gradio_api/call/{name}", json={"data": []}).status_code == 404, name
    page = httpx.get(base + "/").text
    assert "key=" not in page and "te_teacher" not in page
    latest = httpx.get(base + "/class/latest").json()
    # what everyone may see: the newest pushes, no names (link: on a hub student's server, whether the class's
    # service answers; '' here)
    assert set(latest) == {"epoch", "push", "pushes", "link"} and latest["link"] == ""


@pytest.mark.slow
def test_the_answers_say_which_are_right():
    """The teacher sees the right choice and, for each answer, whether it is right (lesson steps name `correct:`)."""
    from explorer.classroom.answers import Answer
    from explorer.server.teacher_page import answer_groups
    from explorer.ui import build_app

    build_app()  # the lesson files are read against the app's controls, as the server does
    question = "Where does a previous-token head put its attention?"
    given = [Answer("s1", "Ana", "attention-basics", 0, question, "just left of the diagonal", 1.0),
             Answer("s2", "Ben", "attention-basics", 0, question, "on the diagonal (the character itself)", 2.0),
             Answer("s3", "Chloé", "no-such-lesson", 0, "Why?", "because", 3.0)]
    checked, unknown = answer_groups(given)
    assert checked["correct"] == "just left of the diagonal" and checked["correct"] in checked["choices"]
    assert [row["right"] for row in checked["rows"]] == [True, False]
    assert unknown["correct"] == "" and unknown["rows"][0]["right"] is None  # no lesson file: nothing to check
