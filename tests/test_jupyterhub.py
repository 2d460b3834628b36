"""A course on JupyterHub (docs/deploying.md), on the shipped one-machine config started on loopback as the docs say:
three students and an instructor log in through the hub's login form; each student's own server serves the
explorer behind /user/<name>/transformer-explorer/ and answers gradio_client (an analysis and a training run); the
instructor's teacher page, the hub service, lists them, its pushes reach their pages and their answers its tally;
what a student's cookie or token may not do there is refused. Then a student opens the JupyterLab tile in
Chromium and sees a chart."""
import concurrent.futures
import json
import os
import re
import signal
import time

import pytest
import requests
from gradio_client import Client

from bench.hub_class import TINY_RUN
from bench.local_hub import LocalHub, proxy_installed
from tests.browser_helpers import PANEL_STATE, TIMEOUT_MS, painted, press, screenshot, wait_until_idle
from tests.helpers import wait_for

pytestmark = [pytest.mark.app, pytest.mark.timeout(420)]
STUDENTS = {"alice": 30, "bob": 40, "carol": 50}  # each trains this many steps: every row tells whose run it is
TEACHER = "prof"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not proxy_installed():
        pytest.skip("the hub needs configurable-http-proxy: `make test` installs it (npm)")
    with LocalHub(tmp_path_factory.mktemp("hub"), instructors=(TEACHER,)) as running:
        yield running
    # SIGTERM to the hub ended every process it started: servers, apps, training children, the service, the proxy
    assert len(running.seen) >= 8 and not running.leftover, (len(running.seen), running.leftover)


@pytest.fixture(scope="module")
def students(hub):
    """{name: logged-in requests session}, each student's explorer opened (their servers start side by side)."""
    sessions = {name: hub.login(name) for name in STUDENTS}
    with concurrent.futures.ThreadPoolExecutor(len(sessions)) as pool:
        list(pool.map(lambda name: hub.open_explorer(sessions[name], name), sessions))
    return sessions


def client(hub, session, name) -> Client:
    return Client(hub.explorer_url(name), headers=hub.cookie_header(session), verbose=False)


def train(c: Client, steps: int) -> str:
    c.predict(**TINY_RUN, max_steps=steps, api_name="/train_start")  # by keyword, as the public API promises
    def finished() -> str | None:
        status = c.predict(api_name="/train_status")[1]
        return status if "finished" in status else None
    return wait_for(finished, "the run to finish", 120, interval=0.5)


def report_until_taken(hub, body: dict, headers: dict) -> requests.Response:
    """POST a report; one that came within half a second of the student's own server's is refused (429): again."""
    def sent():
        reply = requests.post(hub.service_url("api/report"), json=body, headers=headers)
        return reply if reply.status_code != 429 else None
    return wait_for(sent, "a report the service takes", 10, interval=0.2)


def class_now(hub, teacher, xsrf) -> dict:
    reply = teacher.get(hub.service_url("teacher/api/class"), headers={"X-XSRFToken": xsrf})
    assert reply.status_code == 200, reply.text[:300]
    return reply.json()


def test_three_students_work_on_their_own_servers_and_the_teacher_page_sees_them(hub, students):
    clients = {name: client(hub, students[name], name) for name in STUDENTS}
    for name, c in clients.items():
        grid, *_, caption = c.predict(prompt="ROMEO:", layer=1, api_name="/attention")
        heatmap = json.loads(grid)["data"][0]
        assert heatmap["type"] == "heatmap" and heatmap["z"]["shape"] == "6, 6" and caption, name  # 6 characters
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        finished = dict(zip(STUDENTS, pool.map(lambda n: train(clients[n], STUDENTS[n]), STUDENTS)))
    for name, steps in STUDENTS.items():  # each server ran its own student's run, nobody else's
        assert f"step **{steps} / {steps}**" in finished[name], finished[name]

    # a student's explorer has no teacher page of its own: it says where the class's is
    elsewhere = students["alice"].get(hub.explorer_url("alice") + "teacher")
    assert elsewhere.status_code == 404 and "/services/transformer-explorer/" in elsewhere.text
    # a student's hub login opens only their own server; the app's port answers only the proxy that launched it
    other = students["alice"].get(hub.explorer_url("bob"))
    assert other.status_code == 403, (other.status_code, other.url)
    ports = [int(re.search(r"--port (\d+)", open(f"/proc/{pid}/cmdline").read().replace("\0", " ")).group(1))
             for pid in hub.remember_processes()
             if "explorer.server.launch" in open(f"/proc/{pid}/cmdline").read()]
    assert len(ports) == 3
    for port in ports:
        direct = requests.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert direct.status_code == 401 and "belongs to a JupyterHub user" in direct.text

    # the instructor's teacher page lists the three with their runs
    teacher = hub.login(TEACHER, next_path="/services/transformer-explorer/")
    xsrf = hub.xsrf_of_page(teacher)
    def listed() -> dict | None:  # each student's server reports every 3 s: their finished run comes within that
        view = class_now(hub, teacher, xsrf)
        return view if {row["id"]: row["model"]["steps"] for row in view["students"]} == STUDENTS else None
    view = wait_for(listed, lambda: f"three students with their runs on the teacher page: "
                    f"{[(r['id'], r['model']['steps']) for r in class_now(hub, teacher, xsrf)['students']]}", 30)
    assert [r["name"] for r in view["leaderboard"][0]["rows"]] and view["figure"], view["leaderboard"]

    # a student is refused the page, the roster and the push, with their cookie and with their own API token
    assert students["bob"].get(hub.service_url()).status_code == 403
    token = {"Authorization": "token " + hub.token_of(students["bob"], "bob")}
    assert requests.get(hub.service_url("teacher/api/class"), headers=token).status_code == 403
    push = {"kind": "message", "text": "I am the teacher now"}
    assert requests.post(hub.service_url("teacher/api/push"), json=push, headers={
        **token, "X-Teacher-Page": "1"}).status_code == 403
    # a report made with bob's token is bob's, whatever name and answers it claims
    forged = {"name": "carol", "row": None, "answers": [
        {"lesson": "attention-basics", "step": 0, "question": "?", "answer": "on the diagonal (the character itself)",
         "at": time.time()}]}
    assert report_until_taken(hub, forged, token).status_code == 200
    assert requests.post(hub.service_url("api/report"), json=forged).status_code == 403  # no token
    answers = class_now(hub, teacher, xsrf)["answers"]
    assert [(r["name"], r["answer"]) for g in answers for r in g["rows"]] == [
        ("carol (bob)", "on the diagonal (the character itself)")]
    table = teacher.get(hub.service_url("teacher/api/answers.csv"), headers={"X-XSRFToken": xsrf}).text.splitlines()
    assert table[0] == "name,student,lesson,step,question,answer,right,time" and len(table) == 2
    assert table[1].startswith("carol (bob),bob,attention-basics,1,") and ",no," in table[1]  # step 1 as shown

    # a push reaches every student's page (their server polls the service)
    sent = teacher.post(hub.service_url("teacher/api/push"), json={"kind": "message", "text": "Pens down."},
                        headers={"X-XSRFToken": xsrf, "X-Teacher-Page": "1"})
    assert sent.status_code == 200 and "Sent to the class" in sent.json()["ok"], sent.text
    for name, session in students.items():
        latest = lambda: session.get(hub.explorer_url(name) + "class/latest").json()  # noqa: E731
        wait_for(lambda: any(p["text"] == "Pens down." for p in latest()["pushes"]),
                 lambda: f"the push on {name}'s page: {latest()}", 15)


@pytest.mark.timeout(300)
def test_a_student_opens_the_jupyterlab_tile_answers_a_pushed_question_and_the_teacher_tallies_it(hub, students,
                                                                                                    browser):
    teacher = browser.new_context(viewport={"width": 1500, "height": 1100}).new_page()
    teacher.set_default_timeout(TIMEOUT_MS)
    lab = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    lab.set_default_timeout(TIMEOUT_MS)
    for page, name in ((lab, "alice"), (teacher, TEACHER)):  # through the hub's own login form
        page.goto(f"{hub.url}/hub/login?next=" + ("" if name == "alice" else "/services/transformer-explorer/"))
        page.locator("#username_input").fill(name)
        page.locator("#password_input").fill("any")
        page.locator("#login_submit").click()

    tile = lab.locator(".jp-LauncherCard", has_text="Transformer Explorer")
    tile.wait_for()
    screenshot(lab, "jupyterlab_launcher")
    with lab.context.expect_page() as opened:
        tile.click()
    explorer = opened.value
    explorer.set_default_timeout(TIMEOUT_MS)
    explorer.wait_for_function(f"() => ({PANEL_STATE})().plots >= 4")  # the Attention tab drew its charts
    assert explorer.url.startswith(hub.explorer_url("alice"))
    painted(explorer)
    screenshot(explorer, "jupyterhub_explorer")

    teacher.locator("#students").get_by_text("alice", exact=True).wait_for()  # her page reports to the service
    teacher.locator("#lesson").select_option("attention-basics")
    teacher.locator("#step").select_option("0")
    teacher.locator("#send-step").click()
    notice = explorer.locator("#te-class-notice").first
    step = notice.get_by_text("step 1: How to read an attention map")
    while not step.is_visible():  # the earlier test's message shows first, oldest first: dismissed
        notice.get_by_role("button", name="Dismiss").or_(step).first.wait_for()
        if not step.is_visible():
            notice.get_by_role("button", name="Dismiss").click()
    notice.get_by_role("button", name="Go there").click()
    explorer.get_by_text("Step 1 of 7: How to read an attention map").wait_for()
    explorer.locator("#te-answer-choice").get_by_text("just left of the diagonal").first.click()
    explorer.locator("#te-answer-send").click()
    explorer.locator("#te-answer-sent").get_by_text("Sent to your teacher as").wait_for()
    question = teacher.locator("#answers .question", has_text="How to read an attention map")
    question.locator("td", has_text="alice").first.wait_for()
    assert "✓ right" in question.locator("tr", has_text="alice").first.inner_text()
    painted(teacher)
    screenshot(teacher, "jupyterhub_teacher")

    # the service stops answering (SIGSTOP: a killed one the hub would restart at once): the student's page says
    # so and works on; an answer changed meanwhile reaches the teacher once the service is back
    (service,) = [pid for pid in hub.remember_processes()
                  if "explorer.hub.service" in open(f"/proc/{pid}/cmdline").read()]
    os.kill(service, signal.SIGSTOP)
    try:
        down = explorer.locator("#te-class-link").get_by_text("cannot be reached just now")
        down.wait_for(timeout=30_000)
        explorer.locator("#te-answer-choice").get_by_text("on the diagonal").first.click()
        explorer.locator("#te-answer-send").click()
        explorer.locator("#te-answer-sent").get_by_text("Not quite").wait_for()
        press(explorer, explorer.get_by_role("button", name="Show attention"))
        assert wait_until_idle(explorer, 4)["plots"] >= 4
        screenshot(explorer, "jupyterhub_service_down")
    finally:
        os.kill(service, signal.SIGCONT)
    down.wait_for(state="hidden", timeout=30_000)
    question.locator("tr", has_text="alice").get_by_text("on the diagonal").wait_for()  # caught up
