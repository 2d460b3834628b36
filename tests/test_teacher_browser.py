"""The teacher's view in headless Chromium, played by a teacher and three students on one server of their own
(pushes reach every page, so it is not the shared app of the other browser tests):

- the teacher page refuses a browser without the key, opens with /teacher?key=KEY and lists the students by name;
- a pushed lesson step shows as a notice; "Go there" opens it with its question; answers reach the teacher's tally;
- a class run starts on every student's "Go there" as slots allow, its curves and leaderboard show on the teacher
  page, "Stop all runs" ends them;
- "Open model" opens a student's model read-only in the teacher's own explorer, the student's page untouched;
- a message shows without a "Go there" button.

Writes tests/screenshots/teacher.png (the teacher page with the class's curves and the tally) for the README."""
import os
import subprocess
import sys

import pytest

from tests.browser_helpers import PANEL_STATE, SCREENSHOTS, TIMEOUT_MS, error_toasts
from tests.helpers import ROOT, free_port, wait_for_app

# four pages, two training runs and a server on 2 cores: minutes, and waits that are long on a busy machine
pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]
CLASS_TIMEOUT_MS = 2 * TIMEOUT_MS
KEY = "test-teacher-key-7f3a"
NAMES = ("Ana", "Ben", "Chloé")


@pytest.fixture(scope="module")
def class_url(tmp_path_factory):
    port, folder = free_port(), tmp_path_factory.mktemp("class")
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1"}
    with open(folder / "app.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port), "--max-trainers", "2",
                                 "--teacher-key", KEY, "--class-db", str(folder / "answers.db")],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_app(port, proc)
    except Exception:
        proc.kill()
        raise RuntimeError((folder / "app.log").read_text()[-3000:]) from None
    yield f"http://127.0.0.1:{port}/"
    proc.terminate()
    proc.wait(timeout=15)


def student_pages(browser, url, names):
    """One browser context per student (their own session); the pages load side by side."""
    pages = [browser.new_context(viewport={"width": 1300, "height": 900}).new_page() for _ in names]
    for page in pages:
        page.set_default_timeout(CLASS_TIMEOUT_MS)
        page.goto(url, wait_until="commit")
    for page, name in zip(pages, names):
        page.get_by_text("Inspecting").first.wait_for()
        page.get_by_text("Lesson", exact=True).first.click()  # the accordion holds the name box
        box = page.locator("#te-student-name textarea, #te-student-name input").first
        box.fill(name)
        box.press("Enter")
    return pages


def go_there(page, expected_text):
    notice = page.locator("#te-class-notice").first
    notice.get_by_text(expected_text).wait_for()
    notice.get_by_role("button", name="Go there").click()
    notice.wait_for(state="hidden")


def teacher_says(teacher, text):
    teacher.locator("#feedback").get_by_text(text).wait_for()


def test_teacher_and_three_students(browser, class_url):
    locked = browser.new_context().new_page()
    reply = locked.goto(class_url + "teacher")
    assert reply.status == 403 and "needs its key" in locked.content()
    assert locked.goto(class_url + "teacher?key=not-the-key").status == 403

    teacher_context = browser.new_context(viewport={"width": 1500, "height": 1300})
    teacher = teacher_context.new_page()
    teacher.set_default_timeout(CLASS_TIMEOUT_MS)
    assert teacher.goto(class_url + "teacher?key=" + KEY).ok
    assert "key=" not in teacher.url  # the key leaves the address bar; a cookie keeps the door open
    students = student_pages(browser, class_url, NAMES)
    for name in NAMES:
        teacher.locator("#students").get_by_text(name, exact=True).wait_for()

    # a lesson step with a choice question: every student goes there, answers; the teacher sees the tally
    teacher.locator("#lesson").select_option("attention-basics")
    teacher.locator("#step").select_option("0")
    teacher.locator("#send-step").click()
    teacher_says(teacher, "Sent to the class")
    choices = ("just left of the diagonal", "just left of the diagonal", "on the diagonal")
    for page, choice in zip(students, choices):
        go_there(page, "step 1: How to read an attention map")
        page.get_by_text("Step 1 of 7: How to read an attention map").wait_for()
        page.locator("#te-answer-choice").get_by_text(choice, exact=False).first.click()
        page.locator("#te-answer-send").click()
        page.locator("#te-answer-sent").get_by_text("Sent to your teacher as").wait_for()
    question = teacher.locator("#answers .question")
    question.get_by_text("Chloé").wait_for()
    tally = {row.locator(".label").inner_text(): int(row.locator(".count").inner_text())
             for row in question.locator(".tally").all()}
    assert sorted(tally.values(), reverse=True)[:2] == [2, 1] and sum(tally.values()) == 3, tally
    verdict = question.locator(".verdict").inner_text()  # the right choice is named, each answer marked
    assert verdict == "2 of 3 answers right (the right choice: just left of the diagonal).", verdict
    assert question.locator("td.wrong").count() == 1 and question.locator("td.right").count() == 2
    csv_text = teacher.evaluate("() => fetch('/teacher/api/answers.csv').then(r => r.text())")
    assert csv_text.splitlines()[0].startswith("name,student,lesson,step") and len(csv_text.splitlines()) == 4

    # a class run: each "Go there" fills the Train tab with the preset and starts it, as the 2 slots allow (the
    # third student is told when one frees); curves reach the teacher. The preset runs for minutes (the small
    # "names" one finished within seconds on a fast machine, freeing a slot before the third student asked)
    teacher.locator("#preset").select_option("classroom")
    teacher.locator("#send-run").click()
    teacher_says(teacher, "Sent to the class")
    for page in students[:2]:
        go_there(page, "Class run")
    # both runs hold their slots before the third student asks (each Start prepares its data first, so the order
    # in which three near-simultaneous Starts take the slots is not the order of the clicks)
    teacher.wait_for_function("() => (document.querySelector('#students').textContent.match(/running/g) || [])"
                              ".length >= 2")
    go_there(students[2], "Class run")
    students[2].get_by_text("training slots of this server are in use").first.wait_for()
    teacher.wait_for_function("() => document.querySelectorAll('#curves .xy').length >= 2")
    teacher.locator("#leaderboard").get_by_text("Ana").wait_for()  # ranked by validation loss once evaluated

    teacher.once("dialog", lambda dialog: dialog.accept())
    teacher.locator("#stop-all").click()
    teacher_says(teacher, "Stopped")
    teacher.wait_for_function("() => !document.querySelector('#students').textContent.includes('running')")

    # open Ana's model read-only in the teacher's own explorer tab
    row = teacher.locator("#students tr", has_text="Ana")
    with teacher_context.expect_page() as opened:
        row.get_by_role("button", name="Open model").click()
    explorer = opened.value
    explorer.set_default_timeout(CLASS_TIMEOUT_MS)
    explorer.get_by_text("Ana's model, a read-only copy").first.wait_for()
    assert students[0].get_by_text("read-only copy").count() == 0
    teacher.locator("#students").get_by_text("you (the teacher)").wait_for()
    SCREENSHOTS.mkdir(exist_ok=True)
    teacher.screenshot(path=str(SCREENSHOTS / "teacher.png"), full_page=True)

    teacher.locator("#message").fill("Pens down: look at the board.")
    teacher.locator("#send-message").click()
    for page in students:
        notice = page.locator("#te-class-notice").first
        notice.get_by_text("Pens down").wait_for()
        assert not notice.get_by_role("button", name="Go there").is_visible()
    # no error but the third student's "slots in use", which may still show (a toast lasts 10 s)
    assert [error_toasts(page) for page in students[:2]] == [[], []]
    assert all("training slots of this server are in use" in text for text in error_toasts(students[2]))


def teacher_push(teacher, body: dict) -> dict:
    """A push as the teacher page's own script sends it."""
    return teacher.evaluate("(body) => fetch('/teacher/api/push', {method: 'POST', headers: {'Content-Type': "
                            "'application/json', 'X-Teacher-Page': '1'}, body: JSON.stringify(body)})"
                            ".then((r) => r.json())", body)


def test_pushes_reach_a_scrolled_page_in_turn_and_ask_before_replacing_a_students_model(browser, class_url):
    teacher = browser.new_context().new_page()
    teacher.set_default_timeout(CLASS_TIMEOUT_MS)
    assert teacher.goto(class_url + "teacher?key=" + KEY).ok
    teacher_push(teacher, {"kind": "message", "text": "Welcome."})  # a page new to the class shows the newest push
    (page,) = student_pages(browser, class_url, ["Dana"])
    notice = page.locator("#te-class-notice").first
    notice.get_by_text("Welcome.").wait_for()
    notice.get_by_role("button", name="Dismiss").click()
    notice.wait_for(state="hidden")

    # scrolled far down a long tab, two pushes back to back: the first shows in view, the second waits its turn
    page.get_by_role("tab", name="Residual stream").click()
    page.wait_for_function(f"() => ({PANEL_STATE})().plots >= 4")
    page.mouse.wheel(0, 3000)
    page.wait_for_function("() => window.scrollY > 800")
    teacher_push(teacher, {"kind": "message", "text": "First: look at the residual stream."})
    teacher_push(teacher, {"kind": "message", "text": "Second: compare the layers."})
    notice.get_by_text("First: look at the residual stream.").wait_for()
    notice.get_by_text("1 more from your teacher after this one").wait_for()
    box, height = notice.bounding_box(), page.viewport_size["height"]
    assert 0 <= box["y"] and box["y"] + box["height"] <= height, box  # in the window, however far it scrolled
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "class-notice-scrolled.png"))
    notice.get_by_role("button", name="Dismiss").click()
    notice.get_by_text("Second: compare the layers.").wait_for()
    assert notice.get_by_text("more from your teacher").count() == 0
    notice.get_by_role("button", name="Dismiss").click()
    notice.wait_for(state="hidden")

    # the student's own model: a pushed step naming a shipped model asks first; "Keep my model" keeps it
    page.get_by_role("tab", name="Train").click()
    page.get_by_role("button", name="Use the untrained model (random weights)").click()
    page.get_by_text("Inspecting untrained").first.wait_for()
    for answer in ("Keep my model", "Open it anyway (replaces my model)"):
        teacher_push(teacher, {"kind": "step", "lesson": "attention-basics", "step": 0})  # names model: shakespeare
        notice.get_by_text("step 1: How to read an attention map").wait_for()
        notice.get_by_role("button", name="Go there").click()
        notice.get_by_text("in place of the model you are inspecting now (untrained").wait_for()
        assert page.get_by_text("Inspecting untrained").first.is_visible()  # nothing changed while it asks
        notice.get_by_role("button", name=answer).click()
        notice.wait_for(state="hidden")
    page.get_by_text("Step 1 of 7: How to read an attention map").wait_for()
    page.get_by_text("Inspecting shakespeare").first.wait_for()
    assert error_toasts(page) == []
