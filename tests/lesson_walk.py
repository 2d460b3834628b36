"""The lesson walk's steps (tests/test_lesson_walk_browser.py and tests/test_lesson_walk_later_browser.py walk the
two halves of the walk order); what it checks is said there."""
import re

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from explorer.common.shipped_list import shipped_models
from explorer.teaching.lesson_claims import models_in_effect
from explorer.teaching.lessons import read_lesson, shipped_lessons
from tests.browser_helpers import ERROR_TOAST, SCREENSHOTS, VISIBLE_PANEL, clipped_texts, painted, press

FIRST = "grokking"  # it leaves a task model open: the next lesson's link failed on it

PRETRAINED = "smollm2-135m"
STEP_TIMEOUT_MS = 600_000  # SmolLM2's first open and its 30-layer patching take minutes on a loaded machine
PRESSED = re.compile(r"[Pp]ress \*\*([^*]+)\*\*")  # "Press **Patch**", "then press **Compare**"
TYPED = re.compile(r"Type `([^`]+)` in \*\*([^*]+)\*\*")  # "Type `0.1` in **Heads**"
NOT_PRESSED = {"Start", "Pause", "Resume", "Stop"}  # a training run outlasts the walk
# A lab that needs a model trained on its task: the walk trains none, so it opens the shipped one when installed
NEEDS_TASK_MODEL = {"Show the lab": ("grokking", "Open the shipped grokking model")}
SLOW_ON_PRETRAINED = {"Compare", "Generate step by step"}  # hundreds of SmolLM2 tokens: minutes under load
BUSY = f"() => {{ const p = {VISIBLE_PANEL}; return p ? p.querySelectorAll('.eta-bar, .pending').length : 1; }}"
FOLDER = SCREENSHOTS / "lessons"
FIRST_VIEW = f"""() => {{ const p = {VISIBLE_PANEL};
  const said = p && [...p.querySelectorAll('.te-caption')].find(c => c.innerText.trim());
  const target = said || (p && p.querySelector('.js-plotly-plot'));
  if (target) target.scrollIntoView({{block: 'start'}}); else window.scrollTo(0, 0); }}"""


def wait_idle(page) -> None:
    """Until the visible tab has no event running and the page has painted what arrived."""
    page.wait_for_function(f"() => ({BUSY})() === 0", timeout=STEP_TIMEOUT_MS)
    painted(page)


def visible_button(page, label: str):
    return page.get_by_role("button", name=label, exact=True).locator("visible=true").first


def do_what_the_step_says(page, text: str, pretrained: bool) -> list[str]:
    """Type what the step says to type and press the buttons it names, in its order; -> the buttons pressed."""
    for value, label in TYPED.findall(text):
        box = page.get_by_label(label).locator("visible=true").first  # "Heads": "Heads (layer.head, ...)"
        box.fill(value)
    pressed = []
    for label in (" ".join(found.split()) for found in PRESSED.findall(text)):  # a name may wrap a line
        if label in NOT_PRESSED or (pretrained and label in SLOW_ON_PRETRAINED):
            continue
        if label in NEEDS_TASK_MODEL:
            model, opener = NEEDS_TASK_MODEL[label]
            if model not in shipped_models():
                continue
            press(page, visible_button(page, opener))
        button = visible_button(page, label)
        assert button.count() == 1, f"the step names a button {label!r} that its tab does not show"
        button.scroll_into_view_if_needed()
        press(page, button)
        pressed.append(label)
    return pressed


def answer(page, question, wrong_first: bool) -> None:
    """Send an answer as a student would; where the step knows the right choice, a wrong one first when wrong_first
    ("Not quite"), then the right one ("Right."); elsewhere the first choice or a typed answer ("Sent to your
    teacher")."""
    said = page.locator("#te-answer-sent")
    if question.correct and wrong_first:
        wrong = next(c for c in question.choices if c != question.correct)
        send_answer(page, question, wrong)
        said.get_by_text("Not quite:").wait_for()
    send_answer(page, question, question.correct or (question.choices or [""])[0])
    said.get_by_text("Right." if question.correct else "Sent to your teacher").wait_for()


def send_answer(page, question, choice: str) -> None:
    if question.choices:
        page.locator("#te-answer-choice").get_by_text(choice, exact=True).first.click()
    else:
        page.locator("#te-answer-text textarea").fill("My answer, typed by the lesson walk test.")
    page.locator("#te-answer-send").click()


def first_half(order: list[str]) -> list[str]:
    return order[:len(order) // 2 + 1]


def second_half(order: list[str]) -> list[str]:
    """From the first half's last lesson on: each lesson of the walk still opens from the end of the one before."""
    return order[len(order) // 2:]


def walk_in_one_context(browser, app_url, app_log_tail, order: list[str]) -> None:
    """The lessons in one browser context, as a student goes on: each lesson's end offers its `next:` lessons, and
    the walk clicks the one walk_order put next (else opens its link), so each lesson opens on what the one before
    left behind (its model, a reload of the same session)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(STEP_TIMEOUT_MS)
    FOLDER.mkdir(parents=True, exist_ok=True)
    page.goto(app_url + f"?lesson={order[0]}")
    for slug, following in zip(order, [*order[1:], None]):
        walk(page, slug)
        if following is None:
            break
        page = open_next(page, app_url, following)
        wait_for_lesson(page, following, app_log_tail)
    context.close()


def wait_for_lesson(page, slug: str, app_log_tail) -> None:
    """Until the lesson box shows lesson slug's title; an error toast on the way, or no title in STEP_TIMEOUT_MS,
    fails with what the page shows instead (a screenshot <slug>-opening.png, the lesson box, the toasts, whether an
    event is still running in it) and the end of the app's log."""
    title = read_lesson(shipped_lessons()[slug]).title
    shown = f"() => document.querySelector('#te-lesson-title')?.innerText.trim() === {title!r}"
    try:
        page.wait_for_function(f"() => ({shown})() || !!document.querySelector('{ERROR_TOAST}')")
    except PlaywrightTimeout:
        pass
    if page.evaluate(shown):
        return
    page.screenshot(path=str(FOLDER / f"{slug}-opening.png"))
    toasts = [t.inner_text() for t in page.locator("[data-testid=toast-text]").all()]
    box = page.locator("#te-lesson-title").inner_text() + " | " + page.locator("#te-lesson-text").inner_text()[:300]
    running = page.evaluate("() => document.querySelectorAll('.pending, .eta-bar').length")
    raise AssertionError(f"lesson {slug!r} did not open (address {page.url}); the lesson box shows {box!r}; "
                         f"toasts: {toasts}; progress indicators on the page: {running}; the app's log ends:\n"
                         f"{app_log_tail()}")


def open_next(page, app_url: str, slug: str):
    """The page of lesson slug, opened as the student would from the end of the lesson before: its `next:` link (it
    opens the lesson in this page, with no page load, and the address becomes the lesson's link), else its own link
    typed into the address bar. -> the page the lesson is open in."""
    link = page.locator(f"#te-lesson-text a[href='?lesson={slug}']")
    if not link.count():
        page.goto(app_url + f"?lesson={slug}")
        return page
    page.evaluate("() => { window.teSamePage = true; }")  # gone if the link loaded a page
    link.first.click()
    page.wait_for_function(f"() => new URLSearchParams(location.search).get('lesson') === {slug!r}")
    assert len(page.context.pages) == 1, "a lesson link opened a new tab"
    assert page.evaluate("() => window.teSamePage === true"), "a lesson link loaded the page again"
    return page


def walk_order(first: str = FIRST) -> list[str]:
    """Every shipped lesson once, from first on: the first `next:` lesson of the one before not walked yet, else a
    lesson no other names as next, else the first not walked."""
    lessons = {slug: read_lesson(path) for slug, path in shipped_lessons().items()}
    named = {slug for lesson in lessons.values() for slug in lesson.next}
    order = [first]
    while len(order) < len(lessons):
        follow = [slug for slug in lessons[order[-1]].next if slug in lessons and slug not in order]
        unnamed = [slug for slug in lessons if slug not in order and slug not in named]
        order.append((follow or unnamed or [slug for slug in lessons if slug not in order])[0])
    return order


def walk(page, slug: str) -> None:
    """One lesson from its first step, open in the page, to its end; no error toast on any step."""
    lesson = read_lesson(shipped_lessons()[slug])
    pretrained = PRETRAINED in models_in_effect(lesson.steps)
    n, tried_wrong = len(lesson.steps), False
    for k, step in enumerate(lesson.steps, 1):
        counter = f"Step {k} of {n}: {step.title.replace('`', '')}"
        page.wait_for_function(f"() => document.querySelector('#te-lesson-step')?.innerText.trim() === {counter!r}")
        wait_idle(page)
        pressed = [*step.press, *do_what_the_step_says(page, step.text, pretrained)]  # the player presses first
        if step.question:
            answer(page, step.question, wrong_first=not tried_wrong)  # a wrong answer once a lesson
            tried_wrong = tried_wrong or bool(step.question.correct)
        wait_idle(page)  # a button the step presses itself (press:) may still be drawing
        if pressed:  # the chart the last button drew, as the student scrolls to it
            visible_button(page, pressed[-1]).evaluate("b => b.scrollIntoView({block: 'start'})")
        else:  # the tab's captions (the sentences computed from its charts) and the charts below them
            page.evaluate(FIRST_VIEW)
        painted(page)
        page.screenshot(path=str(FOLDER / f"{slug}-{k}.png"))
        errors = [t.inner_text() for t in page.locator(f"{ERROR_TOAST} [data-testid=toast-text]").all()]
        assert not errors, f"{slug}, step {k} ({step.title}): {errors}"
        clipped = clipped_texts(page)  # at 1400 px wide: a label cut by its box, on the tab or in the lesson box
        assert not clipped, f"{slug}, step {k} ({step.title}): text cut off: {clipped}"
        if k < n:
            page.evaluate("() => window.scrollTo(0, 0)")
            press(page, page.get_by_role("button", name="Next →"))
        else:  # the last step says the lesson is over
            page.get_by_text("End of the lesson.").wait_for()
