"""The Heads tab in headless Debian Chromium: report card, induction view, whole-text examples, film strip; and the
Attention tab's training history, the heads at a point of training.

Screenshots land in tests/screenshots/heads*.png (git-ignored) for a human to look at."""
import re

import pytest

from tests.browser_helpers import VISIBLE_PANEL, error_toasts, press, screenshot, visible, wait_until_idle

pytestmark = pytest.mark.browser


def test_opening_the_training_history_draws_the_slider_point(module_page):
    """A student opened "Watch the heads form during training" at 1 (the end) and saw an empty chart until the
    slider moved: opening the box draws the snapshot its slider is at."""
    page = module_page  # first on the module's page (the Attention tab, as loaded); the Heads tab's test follows
    opener = visible(page.get_by_text("Watch the heads form during training"))
    opener.scroll_into_view_if_needed()
    press(page, opener)
    page.wait_for_function(f"() => /snapshot \\d+ of \\d+/.test({VISIBLE_PANEL}.innerText)")
    text = page.evaluate(f"() => {VISIBLE_PANEL}.innerText")
    assert re.search(r"snapshot (\d+) of \1\b", text), "the slider starts at the end: the last snapshot"
    assert error_toasts(page) == []


def test_heads_tab_report_examples_and_film_strip(module_page):
    page = module_page
    press(page, page.get_by_role("tab", name="Heads"))  # opening the tab makes the report card
    state = wait_until_idle(page, 3)
    assert state["plots"] >= 3  # role map, induction loss, induction stripe
    text = page.evaluate(f"() => {VISIBLE_PANEL}.innerText")
    assert "Of 16 heads" in text and "second copy" in text
    assert "L3·H3" in text and "explanation" in text  # the report card table, down to the last head
    screenshot(page, "heads")
    visible(page.get_by_role("button", name="Show examples")).click()
    page.wait_for_function(f"() => {VISIBLE_PANEL}.querySelectorAll('ol.te-examples li').length === 10")
    assert "fires (input > 0)" in page.evaluate(f"() => {VISIBLE_PANEL}.innerText")
    press(page, visible(page.get_by_role("button", name="Show training")))
    wait_until_idle(page, 6)
    assert "snapshots of L0·H0" in page.evaluate(f"() => {VISIBLE_PANEL}.innerText")
    assert error_toasts(page) == []
    screenshot(page, "heads_all")
