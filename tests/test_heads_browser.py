"""The Heads tab in headless Debian Chromium: report card, induction view, whole-text examples, film strip.

Screenshots land in tests/screenshots/heads*.png (git-ignored) for a human to look at."""
import pytest

from tests.browser_helpers import VISIBLE_PANEL, error_toasts, press, screenshot, visible, wait_until_idle

pytestmark = pytest.mark.browser


def test_heads_tab_report_examples_and_film_strip(page):
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
