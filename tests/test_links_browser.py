"""A link opens its view in headless Debian Chromium; the copy button writes a link that opens the same view.

Screenshots land in tests/screenshots/link_*.png (git-ignored) for a human to look at."""
from urllib.parse import quote

import pytest

from tests.browser_helpers import TIMEOUT_MS, VISIBLE_PANEL, error_toasts, screenshot, wait_until_idle

pytestmark = pytest.mark.browser
PROMPT = "ROMEO: wherefore art thou"
SELECTED_TAB = "() => document.querySelector('button[role=tab][aria-selected=true]').innerText"
# token labels (x axis) of the residual tab's heatmap, and the titles of its charts
RESIDUAL_VIEW = f"""() => {{
  const plots = [...{VISIBLE_PANEL}.querySelectorAll('.js-plotly-plot')].filter(g => g.data && g.layout);
  const heat = plots.map(g => g.data.find(t => t.type === 'heatmap')).find(t => t);
  return {{labels: heat ? [...heat.x] : [], titles: plots.map(g => (g.layout.title || {{}}).text || '')}};
}}"""
NUMBER = "(label) => [...{panel}.querySelectorAll('input[type=number]')].find(i => " \
         "i.getAttribute('aria-label') === 'number input for ' + label).value".format(panel=VISIBLE_PANEL)


def open_page(browser, url):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    return context, page


def assert_residual_view(page, prompt: str, layer: int):
    assert page.evaluate(SELECTED_TAB) == "Residual stream"
    assert page.get_by_label("Prompt").input_value() == prompt
    page.wait_for_function(f"() => ({RESIDUAL_VIEW})().labels.length > 0")
    view = page.evaluate(RESIDUAL_VIEW)
    tokens = "".join(label.split(":", 1)[1] for label in view["labels"])  # index:token labels, ␣ for a space
    assert tokens.replace("␣", " ") == prompt
    assert any(title.startswith(f"Layer {layer} ·") for title in view["titles"]), view["titles"]
    assert page.evaluate(NUMBER, "Layer (for the per-position charts)") == str(layer)


def test_a_link_opens_the_residual_tab_with_its_prompt_and_layer(browser, app_url):
    context, page = open_page(browser, f"{app_url}?tab=residual&prompt={quote(PROMPT)}&layer=2&colour=red")
    try:
        wait_until_idle(page, 6)
        assert_residual_view(page, PROMPT, 2)
        note = page.locator("#link-note").inner_text()
        assert "colour" in note and "Ignored" in note  # the unknown parameter is named, the page still works
        assert error_toasts(page) == []
        screenshot(page, "link_residual")
        page.get_by_role("button", name="Copy link to this view").click()
        page.wait_for_function("() => document.querySelector('#view-link textarea, #view-link input').value")
        link = page.locator("#view-link textarea, #view-link input").first.input_value()
    finally:
        context.close()
    assert "tab=residual" in link and "layer=2" in link and "colour" not in link
    context, page = open_page(browser, link)  # the copied link reproduces the view
    try:
        wait_until_idle(page, 6)
        assert_residual_view(page, PROMPT, 2)
        assert page.locator("#link-note").is_hidden()
    finally:
        context.close()
