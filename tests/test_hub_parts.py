"""The JupyterHub pieces in-process (the whole flow through a real hub: tests/test_jupyterhub.py): what the service
keeps of a student's report (untrusted input), the student's server's link to it (up, down, catching up), the
launch key that keeps other local processes out of a student's app, and the launcher tile's settings."""
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from importlib.metadata import entry_points

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from explorer.classroom import hub_link
from explorer.classroom.answers import Answer
from explorer.classroom.broadcast import Broadcast
from explorer.classroom.room import ROOM, configure
from explorer.classroom.roster import CURVE_POINTS
from explorer.common import app_state
from explorer.common.errors import UserError
from explorer.hub import proxy
from explorer.hub.reports import MAX_ANSWERS, SILENT_AFTER, Reports, clean_curve, clean_row, shown_name
from explorer.hub.service import answer_fits, pushed
from explorer.server import proxy_key
from explorer.state import training_run

ROW = {"model": {"name": "trained on first-names", "shape": "1 layer × 2 heads, d_model 16", "params": 3872,
                 "own": True, "steps": 60, "val_loss": 2.81, "val_step": 60, "val_source": "measured",
                 "corpus": "first-names, char tokens (27)"},
       "run": {"state": "finished", "step": 60, "max_steps": 60, "tokens_per_sec": None, "corpus": "first-names"},
       "idle_seconds": 2.0, "page_open": True, "answers": 1}


# ---------------------------------------------------------------- reports (explorer.hub.reports)

def test_a_report_is_filed_under_its_hub_user_whatever_name_it_claims():
    reports = Reports()
    reports.record("bob", {"name": "carol", "row": ROW})
    reports.record("carol", {"name": "", "row": ROW})
    reports.record("dan", {"name": "DAN ", "row": ROW})
    rows, _ = reports.class_now()
    assert [(r["id"], r["name"]) for r in rows] == [("bob", "carol (bob)"), ("carol", "carol"), ("dan", "dan")]
    assert shown_name("ana", "you (the teacher)") == "you (the teacher) (ana)"  # never a bare teacher's row


def test_a_hostile_row_is_rebuilt_with_the_pages_types_and_bounded_text():
    hostile = {"model": {"name": "<b>x</b>" * 100, "params": "many", "own": "yes", "steps": -5,
                         "val_loss": float("nan"), "val_source": "trust me", "corpus": 7},
               "run": {"state": "rm -rf", "step": 1e30, "max_steps": True}, "idle_seconds": "x", "answers": []}
    row = clean_row("eve", "eve", hostile)
    model, run = row["model"], row["run"]
    assert len(model["name"]) <= 120 and model["params"] == 0 and model["own"] is False and model["steps"] == 0
    assert model["val_loss"] is None and model["val_source"] == "file" and model["corpus"] is None
    assert run["state"] == "error" and run["max_steps"] == 0 and isinstance(run["step"], int)
    assert row["idle_seconds"] == 0.0 and row["answers"] == 0 and row["page_open"] is False
    assert clean_row("eve", "eve", ["not", "a", "row"]) is None


def test_a_curve_is_cut_to_the_points_the_page_draws_and_anything_else_dropped():
    long = {"steps": list(range(5000)), "loss": [1.0] * 5000, "val_steps": [0, 10], "val_loss": [2.0]}
    curve = clean_curve("ana", "ana", long)
    assert len(curve["steps"]) == len(curve["loss"]) == CURVE_POINTS and len(curve["val_steps"]) == 1
    assert clean_curve("ana", "ana", {"steps": [True], "loss": [1.0]}) is None
    assert clean_curve("ana", "ana", {"steps": "0,1", "loss": [1.0]}) is None


def test_a_student_reports_at_most_twice_a_second():
    reports = Reports()
    assert not reports.too_soon("ana", now=10.0)
    reports.record("ana", {"row": ROW}, now=10.0)
    assert reports.too_soon("ana", now=10.2) and not reports.too_soon("ana", now=10.6)
    assert not reports.too_soon("ben", now=10.2)  # one student's reports never hold up another's


@pytest.mark.slow
def test_a_pushed_link_is_checked_against_the_apps_controls_in_the_service():
    configure()
    sent = pushed({"kind": "link", "link": "http://hub/user/x/transformer-explorer/?tab=attention&layer=1&head=0"})
    assert sent["push"]["query"] == {"tab": "attention", "layer": "1", "head": "0"}
    with pytest.raises(UserError, match="not a setting this app knows"):
        pushed({"kind": "link", "link": "?tab=attention&layr=1"})


def test_a_page_that_stops_reporting_reads_closed_and_idle():
    reports = Reports()
    reports.record("ana", {"row": ROW}, now=100.0)
    row = reports.class_now(now=100.0 + SILENT_AFTER + 1)[0][0]
    assert row["page_open"] is False and row["idle_seconds"] == pytest.approx(2.0 + SILENT_AFTER + 1)


def test_only_answers_to_a_shipped_lessons_question_with_an_allowed_choice_are_kept(monkeypatch):
    monkeypatch.setattr(app_state, "lesson_checks", False)  # as in the service: no controls to check against
    answers = Reports().record("ana", {"answers": [
        {"lesson": "attention-basics", "step": 0, "answer": "just left of the diagonal", "at": 1.0},
        {"lesson": "attention-basics", "step": 0, "answer": "somewhere I made up", "at": 1.0},
        {"lesson": "no-such-lesson", "step": 0, "answer": "x", "at": 1.0},
        {"lesson": "attention-basics", "step": 999, "answer": "x", "at": 1.0},
        {"lesson": "attention-basics", "step": "0", "answer": "x"}, "junk"] * (MAX_ANSWERS // 6 + 10)})
    assert len(answers) <= MAX_ANSWERS and {a.student for a in answers} == {"ana"}
    kept = [(a.lesson, a.step, a.answer) for a in answers if answer_fits(a)]
    assert set(kept) == {("attention-basics", 0, "just left of the diagonal")}
    assert all(a.at <= time.time() for a in answers)


# ---------------------------------------------------------------- the student's server's link (explorer.classroom.hub_link)

class FakeService(BaseHTTPRequestHandler):
    epoch, pushes, received = "e1", [], []

    def do_POST(self):
        FakeService.received.append((self.headers["Authorization"], json.loads(self.rfile.read(
            int(self.headers["Content-Length"])))))
        body = json.dumps({"epoch": FakeService.epoch, "pushes": FakeService.pushes}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def service():
    server = HTTPServer(("127.0.0.1", 0), FakeService)
    FakeService.received, FakeService.pushes, FakeService.epoch = [], [], "e1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_link_reports_with_the_students_token_mirrors_pushes_and_resends_answers_after_an_outage(service,
                                                                                                     monkeypatch):
    configure()
    pushed = Broadcast().send("message", "Pens down.")
    FakeService.pushes = [pushed.public("e1")]
    link = hub_link.ClassLink(f"http://127.0.0.1:{service.server_port}/api/report", "the-token")
    monkeypatch.setattr(hub_link, "LINK", link)
    ROOM.answers.record(Answer("s1", "", "attention-basics", 0, "?", "on the diagonal", 1.0))

    assert link.report_once() and hub_link.link_note() == ""
    token, body = FakeService.received[-1]
    assert token == "token the-token" and [a["answer"] for a in body["answers"]] == ["on the diagonal"]
    assert ROOM.broadcast.epoch == "e1" and ROOM.broadcast.get(pushed.id).text == "Pens down."
    assert link.report_once() and FakeService.received[-1][1]["answers"] == []  # confirmed: not sent again

    link.report_url = "http://127.0.0.1:9/api/report"  # the service is down: the page says so, nothing is lost
    assert not link.report_once() and "cannot be reached" in hub_link.link_note()
    link.report_url = f"http://127.0.0.1:{service.server_port}/api/report"
    FakeService.epoch = "e2"  # it came back restarted (its answers lost): the next report sends them again
    assert link.report_once() and hub_link.link_note() == ""
    assert link.report_once() and [a["answer"] for a in FakeService.received[-1][1]["answers"]] == [
        "on the diagonal"]


# ---------------------------------------------------------------- a student's server in a container

def test_a_containers_cpu_limit_caps_a_runs_threads(tmp_path):
    limit = tmp_path / "cpu.max"
    for text, quota in (("200000 100000\n", 2.0), ("150000 100000\n", 1.5), ("max 100000\n", None), ("junk", None)):
        limit.write_text(text)
        assert training_run.cgroup_cpu_quota(str(limit)) == quota, text
    assert training_run.cgroup_cpu_quota(str(tmp_path / "none")) is None
    assert 1 <= training_run.cores() <= (os.cpu_count() or 1)


# ---------------------------------------------------------------- the launch key and the launcher tile

def test_a_single_user_app_answers_only_requests_that_carry_its_launch_key(monkeypatch):
    monkeypatch.setenv(proxy_key.KEY_ENV, "k" * 32)
    inner = Starlette(routes=[Route("/{path:path}", lambda request: PlainTextResponse("the explorer"))])
    with TestClient(proxy_key.ProxyKeyGuard(inner)) as client:
        assert client.get("/").status_code == 401 and "JupyterHub user" in client.get("/").text
        assert client.get("/", headers={proxy_key.KEY_HEADER: "k" * 31 + "x"}).status_code == 401
        assert client.get("/gradio_api/info", headers={proxy_key.KEY_HEADER: "k" * 32}).text == "the explorer"
        assert client.get(proxy_key.STARTUP).text == "the explorer"  # Gradio's own start-up call
    monkeypatch.delenv(proxy_key.KEY_ENV)
    with TestClient(proxy_key.ProxyKeyGuard(inner)) as client:  # not behind the proxy: no key asked
        assert client.get("/").text == "the explorer"


def test_the_launcher_tile_starts_the_app_for_one_user_under_the_proxys_path_with_a_fresh_key():
    (tile,) = [e for e in entry_points(group="jupyter_serverproxy_servers") if e.name == proxy.NAME]
    first, second = tile.load()(), tile.load()()
    command = " ".join(first["command"])
    assert "--single-user" in command and "--port {port}" in command and "{base_url}transformer-explorer" in command
    key = first["environment"][proxy_key.KEY_ENV]
    assert first["request_headers_override"] == {proxy_key.KEY_HEADER: key} and len(key) >= 32
    assert second["environment"][proxy_key.KEY_ENV] != key  # every launch its own
    assert proxy.ICON.exists() and first["launcher_entry"]["title"] == "Transformer Explorer"


@pytest.mark.slow
def test_shapes_on_the_meta_device_import_no_compiler():
    """Opening a model checks its size on the meta device: that must not import torch._dynamo (68 MB in every
    student's server) through a random draw of values nobody reads."""
    import subprocess
    import sys

    code = ("import sys, torch\nfrom model_core import GPT, GPTConfig\nwith torch.device('meta'):\n"
            "    m = GPT(GPTConfig(vocab_size=65, block_size=16, d_model=32, n_heads=4, n_layers=2))\n"
            "assert m.num_params() > 0 and m.embed.weight.is_meta\nprint('torch._dynamo' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "False"
