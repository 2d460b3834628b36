"""The launched app in headless Debian Chromium: every tab's main action renders its charts without an error toast.

Full-page screenshots land in tests/screenshots/<tab>.png (git-ignored) for a human to look at."""
import io

import numpy as np
import pytest

from tests.browser_helpers import ERROR_TOAST, VISIBLE_PANEL, error_toasts, press, screenshot, visible, wait_until_idle

pytestmark = pytest.mark.browser

# tab name, screenshot name, primary button, Plotly charts expected in the tab once it has run
TABS = [
    ("Data", "data", "Prepare data", 1),
    ("Attention", "attention", "Show attention", 4),
    ("Residual stream", "residual", "Show residual stream", 6),
    ("Embeddings", "embeddings", "Show embeddings", 6),
    ("FFN", "ffn", "Show FFN neurons", 2),
    ("Sampling", "sampling", "Show next-token distribution", 2),
    ("Guide", "guide", None, 0),
]


def coloured_pixels(png: bytes) -> int:
    """Pixels that are clearly coloured (not white/grey): lines of a chart, not its grid or axes."""
    from PIL import Image

    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    return int(((rgb.max(axis=-1) - rgb.min(axis=-1)) > 60).sum())


def test_empty_prompt_shows_an_error_toast(page):
    """Proves ERROR_TOAST finds Gradio's error toasts, so the other tests' 'no toast' checks mean something; a refusal
    is titled "Cannot do that", not "Error" (a student took seed 001's refusal of a big model for a crash)."""
    assert error_toasts(page) == []
    visible(page.get_by_label("Prompt")).fill("")
    visible(page.get_by_role("button", name="Show attention")).click()
    page.wait_for_selector(ERROR_TOAST)
    assert any("Type a prompt first" in text for text in error_toasts(page)), error_toasts(page)
    title = page.locator(f"{ERROR_TOAST} .toast-title").first  # Gradio writes its type, "Error": our CSS covers it
    assert title.evaluate("t => getComputedStyle(t, '::before').content") == '"Cannot do that"'
    assert title.evaluate("t => getComputedStyle(t).fontSize") == "0px"  # the word "Error" takes no room


@pytest.mark.parametrize("tab, name, button, n_plots", TABS, ids=[t[1] for t in TABS])
def test_tab_runs_without_errors(module_page, tab, name, button, n_plots):
    """The tabs one after another on one page, as a student clicks through them."""
    page = module_page
    page.get_by_role("tab", name=tab).click()
    if button:
        press(page, visible(page.get_by_role("button", name=button)))
    state = wait_until_idle(page, n_plots)
    assert state["plots"] >= n_plots
    if tab == "Sampling":
        visible(page.get_by_role("button", name="Compare")).click()
        page.wait_for_function("() => document.querySelectorAll('.te-compare .te-col').length === 4")
        visible(page.get_by_role("button", name="Generate step by step")).click()
        page.wait_for_function("() => document.querySelectorAll('.te-gen span[title]').length > 0")
        wait_until_idle(page, n_plots)
    if tab == "Guide":
        assert "attention" in page.evaluate(f"() => {VISIBLE_PANEL}.innerText").lower()
    assert error_toasts(page) == []
    screenshot(page, name)


def test_train_tab_live_charts(page):
    page.get_by_role("tab", name="Train").click()
    page.wait_for_function(f"() => {VISIBLE_PANEL}.innerText.includes('parameters')")  # the live count
    visible(page.get_by_label("Steps", exact=True)).fill("2000")  # still running when Stop is pressed
    visible(page.get_by_label("Evaluate every N steps")).fill("20")
    visible(page.get_by_role("button", name="Start")).click()
    try:
        page.wait_for_function(
            "() => { const g = document.querySelector('#live-attention .te-live-plot');"
            " return g && g.classList.contains('js-plotly-plot') && g.data && g.data.length > 0; }")
        page.wait_for_function(f"() => /step \\d+ \\/ 2,000/.test({VISIBLE_PANEL}.innerText)")
        loss_points = ("() => { const g = document.querySelector('#live-loss .te-live-plot');"
                       " const t = g && g.data && g.data.find(t => t.name.startsWith('train loss (each'));"
                       " return t ? t.x.length : 0; }")
        page.wait_for_function(f"() => ({loss_points})() >= 2")
        page.evaluate("() => { document.querySelector('#live-loss .te-live-plot').dataset.marker = 'kept'; }")
        before = page.evaluate(loss_points)
        page.wait_for_function(f"() => ({loss_points})() > {before}", timeout=60_000)
        # Plotly.react redrew the same element: no remount (zoom and memory are kept)
        assert page.evaluate("() => document.querySelector('#live-loss .te-live-plot').dataset.marker") == "kept"
        page.wait_for_function(f"() => ({loss_points})() >= 20", timeout=60_000)  # a third of the x axis
        assert coloured_pixels(visible(page.locator("#live-loss")).screenshot()) > 300  # a line, not just axes
        n_heads = page.evaluate("() => document.querySelector('#live-attention .te-live-plot').data"
                                ".filter(t => t.type === 'heatmap').length")
        assert n_heads == 12  # the default classroom model: 3 layers x 4 heads
        screenshot(page, "train")
    finally:
        visible(page.get_by_role("button", name="Stop")).click()
    page.wait_for_function(f"() => /stopped|finished/.test({VISIBLE_PANEL}.innerText)")
    assert error_toasts(page) == []
    assert "trained on shakespeare" in page.locator("body").inner_text()  # the model line above the tabs


def test_a_generation_under_another_prompt_is_cleared_and_names_its_button(page):
    """Step by step's text and table, written for one prompt, are emptied when the prompt changes (as when a lesson
    moved on, or another model opened): the text says which button writes them again."""
    page.get_by_role("tab", name="Sampling").click()
    press(page, visible(page.get_by_role("button", name="Generate step by step")))
    said = "Not drawn for these inputs yet: press Generate step by step."
    panel = f"() => {VISIBLE_PANEL}.innerText"
    generated = f"() => {VISIBLE_PANEL}.querySelectorAll('pre.te-gen').length"
    assert page.evaluate(generated) == 1 and said not in page.evaluate(panel)
    prompt = visible(page.get_by_label("Prompt"))
    prompt.fill(prompt.input_value() + " and more")
    page.wait_for_function(f"() => {VISIBLE_PANEL}.innerText.includes({said!r})")
    assert "**" not in page.evaluate(panel)  # HTML, not Markdown's asterisks
    assert page.evaluate(generated) == 0
    assert "cumulative" in page.evaluate(panel)  # the emptied table keeps its headers
    assert error_toasts(page) == []
