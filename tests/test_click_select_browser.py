"""Clicking a head in the Attention tab's layer × head grid selects it, in headless Debian Chromium.

The screenshot lands in tests/screenshots/click_select.png (git-ignored) for a human to look at."""
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser_helpers import VISIBLE_PANEL, error_toasts, screenshot

pytestmark = pytest.mark.browser

GRID = "#attention-grid .te-live-plot"
# page coordinates of the centre of grid panel i (layer * n_heads + head), from Plotly's laid-out axes
CELL_CENTRE = f"""(i) => {{
  const g = document.querySelector('{GRID}'), L = g._fullLayout, suffix = i ? i + 1 : '';
  const xa = L['xaxis' + suffix], ya = L['yaxis' + suffix], r = g.getBoundingClientRect();
  return {{x: r.left + xa._offset + xa._length / 2, y: r.top + ya._offset + ya._length / 2}};
}}"""
TITLES = "() => [...document.querySelectorAll('.js-plotly-plot')].map(g => ((g.layout || {}).title || {}).text || '')"
NUMBER = f"(label) => {VISIBLE_PANEL}.querySelector(`input[aria-label='number input for ${{label}}']`).value"


def test_clicking_a_grid_cell_selects_that_head(page):
    page.wait_for_function(f"() => (document.querySelector('{GRID}') || {{}}).data")
    n_heads = page.evaluate(f"() => document.querySelector('{GRID}').data.filter(t => t.type === 'heatmap').length")
    assert n_heads == 16  # the default model: 4 layers x 4 heads
    assert "L0·H0 attention pattern" in page.evaluate(TITLES)
    layer, head = 2, 3
    selected = f"() => ({TITLES})().includes('L{layer}·H{head} attention pattern')"
    for attempt in range(3):  # a click while the page still lays itself out (a loaded machine) may land on nothing
        page.locator("#attention-grid").scroll_into_view_if_needed()
        centre = page.evaluate(CELL_CENTRE, layer * 4 + head)
        page.mouse.move(centre["x"], centre["y"])  # Plotly reports a click on the point under the hover
        page.mouse.click(centre["x"], centre["y"])
        try:
            page.wait_for_function(selected, timeout=30_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    titles = page.evaluate(TITLES)
    assert f"L{layer}·H{head}: from scores to output, step by step" in titles  # the four steps follow
    assert page.evaluate(NUMBER, "Layer") == str(layer) and page.evaluate(NUMBER, "Head") == str(head)
    outlined = page.evaluate(f"() => document.querySelector('{GRID}').layout.shapes.map(s => s.xref)")
    assert outlined == [f"x{layer * 4 + head + 1} domain"]  # the grid outlines the selected head
    assert error_toasts(page) == []
    screenshot(page, "click_select")
