"""A page reload keeps the session's work (headless Debian Chromium): the browser keeps its session's key."""
import re

import pytest

from tests.browser_helpers import PANEL_STATE, TIMEOUT_MS, VISIBLE_PANEL, error_toasts, visible

pytestmark = pytest.mark.browser
MODEL_LINE = re.compile(r"Inspecting (.+?): \d+ layers")


def model_line(page) -> str:
    try:
        page.wait_for_function("() => /Inspecting .+: \\d+ layers/.test(document.body.innerText)")
    except Exception as err:  # noqa: BLE001 - say what the page showed instead
        raise AssertionError(f"no model line; the page read:\n{page.locator('body').inner_text()[:2000]}") from err
    return MODEL_LINE.search(page.locator("body").inner_text()).group(1)


def fresh_page(browser, url):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.wait_for_function(f"() => ({PANEL_STATE})().plots >= 4")
    return context, page


def test_a_reload_keeps_the_trained_model(browser, app_url):
    context, page = fresh_page(browser, app_url)
    try:
        assert model_line(page) == "shakespeare"
        page.get_by_role("tab", name="Train").click()
        page.wait_for_function(f"() => {VISIBLE_PANEL}.innerText.includes('parameters')")
        visible(page.get_by_label("Steps", exact=True)).fill("30")
        visible(page.get_by_label("Evaluate every N steps")).fill("10")
        visible(page.get_by_role("button", name="Start")).click()
        page.wait_for_function(f"() => /finished/.test({VISIBLE_PANEL}.innerText)", timeout=120_000)
        trained = model_line(page)
        assert trained.startswith("trained on shakespeare (30 steps")
        page.reload()
        page.wait_for_function(f"() => ({PANEL_STATE})().plots >= 4")
        assert model_line(page) == trained  # the same session: its trained model, not the default one
        assert error_toasts(page) == []
        other_context, other = fresh_page(browser, app_url)  # another browser: its own fresh session
        try:
            assert model_line(other) == "shakespeare"
        finally:
            other_context.close()
    finally:
        context.close()
