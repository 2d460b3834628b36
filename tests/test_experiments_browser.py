"""The Experiments tab in headless Chromium: ablate a head and see both columns; the importance map names a head,
one click knocks it out, and the validation loss rises. Screenshot: tests/screenshots/experiments.png."""
import re

import pytest

from tests.browser_helpers import VISIBLE_PANEL, error_toasts, press, screenshot, visible, wait_until_idle

pytestmark = pytest.mark.browser

PANEL_TEXT = f"() => {VISIBLE_PANEL}.innerText"


def validation_change(page) -> float:
    """The 'change' cell of the validation-loss row in the numbers table."""
    row = visible(page.locator("tr", has_text="Validation loss")).inner_text()
    return float(row.split()[-1])


# The tab's three browser tests share one page (module_page; a page load costs seconds of two cores), in this order:
# ablating nothing (a toast, closed), ablating a head and the most important one, then model B and a prompt of names.


def test_ablating_nothing_gets_a_message(module_page):
    page = module_page
    page.get_by_role("tab", name="Experiments").click()
    visible(page.get_by_label("Heads (layer.head, e.g. 1.3, 2.0)")).fill("")
    visible(page.get_by_role("button", name="Run ablation")).click()
    page.wait_for_selector(".toast-body.error")
    assert any("Nothing to knock out" in text for text in error_toasts(page))
    page.locator(".toast-body.error [data-testid=toast-close]").first.click()  # the next test counts toasts


def test_ablate_a_head_then_the_most_important_one(module_page):
    page = module_page
    page.get_by_role("tab", name="Experiments").click()
    heads = visible(page.get_by_label("Heads (layer.head, e.g. 1.3, 2.0)"))
    heads.fill("1.2")
    press(page, visible(page.get_by_role("button", name="Run ablation")))
    wait_until_idle(page, 2)
    columns = page.locator(".te-compare .te-col").locator("visible=true")
    assert columns.count() == 2
    assert "Intact model" in columns.nth(0).inner_text() and "Without head L1·H2" in columns.nth(1).inner_text()
    assert "With head L1·H2 replaced by its mean" in page.evaluate(PANEL_TEXT)

    press(page, visible(page.get_by_role("button", name="Compute importance map")))
    wait_until_idle(page, 3)
    layer, head = re.search(r"Knocking out head L(\d+)·H(\d+) hurts most", page.evaluate(PANEL_TEXT)).groups()
    visible(page.get_by_role("button", name="Knock out the most important head")).click()
    page.wait_for_function(f"() => {VISIBLE_PANEL}.innerText.includes('Without head L{layer}·H{head}')")
    wait_until_idle(page, 3)
    assert heads.input_value() == f"{layer}.{head}"
    assert validation_change(page) > 0  # the head the map names matters: without it the loss rises
    assert error_toasts(page) == []
    screenshot(page, "experiments")


def test_compare_with_a_second_model(module_page):
    page = module_page
    page.get_by_role("tab", name="Experiments").click()
    dropdown = visible(page.get_by_label("Shipped model"))
    dropdown.click()
    visible(page.get_by_role("option", name="first-names")).click()
    visible(page.get_by_role("button", name="Use as model B")).click()
    page.wait_for_function(f"() => {VISIBLE_PANEL}.innerText.includes('Model B: shipped first-names')")
    visible(page.get_by_label("Prompt")).fill("emma\njohn\nsophia\nolivia\n")
    visible(page.get_by_role("button", name="Compare A and B on the prompt")).click()
    page.wait_for_function(f"() => {VISIBLE_PANEL}.innerText.includes('bits per character and B (shipped first-names)')")
    wait_until_idle(page, 2)
    assert error_toasts(page) == []
    visible(page.get_by_role("button", name="Compare A and B on the prompt")).scroll_into_view_if_needed()
    screenshot(page, "experiments-compare")


def test_ablate_and_importance_endpoints_through_the_api(app_url):
    """The same endpoints from a script: numbers back, and a bad value gets a sentence, not a stack trace."""
    from gradio_client import Client

    c = Client(app_url, verbose=False)
    *_, numbers, note = c.predict("ROMEO:\nI", "0.1", "", "", "", "zero", -1, 0.0, 10, 0, False, api_name="/ablate")
    assert "Validation loss" in numbers and note.startswith("With head L0·H1 set to zero")
    _, caption = c.predict("mean", api_name="/importance_map")
    assert caption.startswith("Knocking out head")
    with pytest.raises(Exception, match="Head L0·H9 does not exist"):
        c.predict("ROMEO:\nI", "0.9", "", "", "", "mean", -1, 0.0, 10, 0, False, api_name="/ablate")
    with pytest.raises(Exception, match="Query position must be a number, not the text"):
        c.predict("ROMEO:\nI", "0.1", "", "", "", "mean", "last", 0.0, 10, 0, False, api_name="/ablate")
