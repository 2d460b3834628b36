"""The first minute of a classroom run in Chromium: the untrained model's attention shows at once, the early
evaluation at step 10 brings a validation loss, a sample and attention of its own, and the status names the step of
every loss it shows. Screenshots: tests/screenshots/train-step-0.png and train-step-10.png."""
import pytest

from tests.browser_helpers import VISIBLE_PANEL, error_toasts, screenshot, visible

pytestmark = pytest.mark.browser

LIVE_ATTENTION_STEP = ("() => { const c = [...document.querySelectorAll('.te-caption')].find("
                       "(e) => /on the probe text/.test(e.innerText)); const m = c && c.innerText.match(/Step ([\\d,]+) on"
                       " the probe text/); return m ? Number(m[1].replace(/,/g, '')) : -1; }")
SAMPLE = "() => [...document.querySelectorAll('textarea')].find((t) => /^step \\d/.test(t.value))?.value || ''"


def test_a_classroom_run_shows_progress_from_its_first_evaluations(page):  # noqa: F811 - the fixture
    page.set_default_timeout(180_000)  # the run's child process and its data start beside the other worker's tests
    page.get_by_role("tab", name="Train").click()
    page.wait_for_function(f"() => {VISIBLE_PANEL}.innerText.includes('parameters')")
    visible(page.get_by_role("button", name="Start")).click()  # the classroom preset: evaluations every 200 steps
    try:
        page.wait_for_function(f"({LIVE_ATTENTION_STEP})() >= 0")  # the untrained model's attention, at once
        # the untrained model's sample, or the next one: the page shows the newest sample at each poll (once a
        # second), and the step-0 and step-10 samples of this small model can both land between two polls
        page.wait_for_function(f"/^step (0 \\(untrained\\)|10):/.test(({SAMPLE})())")
        screenshot(page, "train-step-0")
        page.wait_for_function(f"({SAMPLE})().startsWith('step 10:')", timeout=180_000)
        page.wait_for_function(f"({LIVE_ATTENTION_STEP})() === 10")
        page.wait_for_function(f"() => /\\(step 10\\)/.test({VISIBLE_PANEL}.innerText)")
        status = page.evaluate(f"() => {VISIBLE_PANEL}.innerText")
        assert "(step 0) to" in status and "Random guessing would score" in status
        assert "Next evaluation (and sample, and attention) at step" in status
        screenshot(page, "train-step-10")
    finally:
        visible(page.get_by_role("button", name="Stop")).click()
    page.wait_for_function(f"() => /stopped|finished/.test({VISIBLE_PANEL}.innerText)")
    assert error_toasts(page) == []
