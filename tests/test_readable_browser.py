"""In Chromium: dark mode keeps captions readable, chart images download as PNG and SVG with names saying tab,
chart, model and prompt, and the Tab key walks through a tab's controls without getting stuck in a chart."""
import re

import pytest

from tests.browser_helpers import PANEL_STATE, SCREENSHOTS, TIMEOUT_MS, press, visible

pytestmark = pytest.mark.browser

CONTRAST = """(el) => {
  const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 4).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  let bg = el, back = [0, 0, 0, 0];
  while (bg && (back = rgb(getComputedStyle(bg).backgroundColor)).length === 4 && back[3] === 0) bg = bg.parentElement;
  const a = lum(rgb(getComputedStyle(el).color)), b = lum(back);
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


def open_app(browser, url, plots: int = 3, width: int = 1400):
    """A fresh page width × 900 px once the visible tab has drawn `plots` charts (the Attention tab: on load)."""
    context = browser.new_context(viewport={"width": width, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.wait_for_function(f"() => ({PANEL_STATE})().plots >= {plots}")
    return page


@pytest.fixture(scope="module")
def default_page(browser, app_url):
    """The app as a fresh page opens it, for the tests that only read it or put back what they change (a page load
    costs seconds of two shared cores)."""
    page = open_app(browser, app_url)
    yield page
    page.context.close()


def test_dark_mode_captions_have_enough_contrast(browser, app_url):
    page = open_app(browser, app_url + "?__theme=dark")
    assert page.evaluate("document.body.classList.contains('dark') || document.documentElement.classList.contains('dark')"
                         " || !!document.querySelector('.dark')")
    caption = page.locator(".te-caption li, .te-caption p").first
    caption.wait_for()
    ratio = caption.evaluate(CONTRAST)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "attention-dark.png"), full_page=False)
    assert ratio >= 4.5, f"caption contrast {ratio:.2f}:1 in dark mode"
    page.context.close()


def test_chart_images_download_as_png_and_svg_with_descriptive_names(default_page):
    page = default_page
    chart = page.locator(".js-plotly-plot").nth(1)  # the selected head (the first is the grid)
    chart.hover()
    svg = chart.locator(".te-svg-btn")
    svg.wait_for()
    names = []
    for button in (chart.locator('.modebar-btn[data-title^="Download plot"]').first, svg):
        chart.hover()
        with page.expect_download() as download:
            button.click()
        names.append(download.value.suggested_filename)
    pattern = r"attention-[a-z0-9-]+-[A-Za-z0-9_]+-First_Citizen\.{}"
    assert re.fullmatch(pattern.format("png"), names[0]) and re.fullmatch(pattern.format("svg"), names[1]), names


def test_tab_key_reaches_the_download_button_past_every_chart(browser, app_url):
    page = open_app(browser, app_url)  # its own: a chart once hovered keeps its toolbar in the Tab order
    page.locator("textarea").first.focus()
    seen = []
    for _ in range(80):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("(document.activeElement.innerText || document.activeElement.ariaLabel || "
                                  "document.activeElement.tagName).trim().slice(0, 40)"))
        if seen[-1].startswith("Download data"):
            break
    assert seen[-1].startswith("Download data"), seen
    assert len(set(seen)) > len(seen) // 2  # focus moves on; nothing holds it
    page.context.close()


SELECTED_HEAD_TITLE = """() => { const plots = [...document.querySelectorAll('.js-plotly-plot')].filter(
  (g) => g.layout && g.layout.title && /attention pattern$/.test(g.layout.title.text || ''));
  return plots.length ? plots[0].layout.title.text : ''; }"""


def test_arrow_keys_on_a_slider_redraw_its_view(default_page):
    page = default_page  # leaves head 3 selected (the tests after it read no head)
    page.wait_for_function(f"({SELECTED_HEAD_TITLE})().includes('L0·H0')")
    slider = page.get_by_label("range slider for Head").first
    slider.focus()
    page.keyboard.press("ArrowRight")  # keydown moves the value, keyup sends the release the view listens to
    page.wait_for_function(f"({SELECTED_HEAD_TITLE})() === 'L0·H1 attention pattern'")
    page.keyboard.down("ArrowRight")  # a held key repeats the move; its one keyup redraws once, at the end
    for _ in range(2):
        page.keyboard.down("ArrowRight")
    page.keyboard.up("ArrowRight")
    page.wait_for_function(f"({SELECTED_HEAD_TITLE})() === 'L0·H3 attention pattern'")


def test_the_header_says_it_is_working_while_a_slow_request_fills_it(default_page):
    """The model line's status tracker shows while a request fills it (a pretrained model's first open: ~20 s);
    after 1.5 s the header says what is going on, and the note goes once the tracker hides."""
    page = default_page
    note = "() => getComputedStyle(document.querySelector('#te-model-info'), '::after')"
    page.wait_for_function(f"({note})().content === 'none'")  # the page's own loading requests are done
    # the tracker shown as Gradio shows it during a request (Gradio may hide it again meanwhile: show it each poll);
    # a pseudo-element that is not there computes opacity 1 too, so the note's text and fade-in are read together
    page.wait_for_function(
        "() => { document.querySelector('#te-model-info [data-testid=status-tracker]').classList.remove('hide');"
        f" const s = ({note})(); return s.opacity === '1' && s.content.includes("
        "'opening a model for the first time can take up to half a minute'); }", polling=200)
    page.evaluate("document.querySelector('#te-model-info [data-testid=status-tracker]').classList.add('hide')")
    page.wait_for_function(f"({note})().content === 'none'")


def test_the_data_file_box_shows_only_once_it_holds_a_file(default_page):
    """An empty 'Data of this tab (.zip)' box sat between the sections of every tab until its button was pressed."""
    page = default_page  # the last test on it: its box stays
    boxes = page.get_by_text("Data of this tab (.zip)")
    assert all(not box.is_visible() for box in boxes.all())
    page.locator("button:visible", has_text="Download data (CSV + settings)").first.click()
    visible_box = page.locator(".block:visible", has=page.get_by_text("Data of this tab (.zip)"))
    visible_box.locator("a[href*='.zip']").first.wait_for()  # the file's link


# Every tick label of a category axis of the chart whose title matches a pattern, as drawn: its text, where its
# tick sits along the axis (the label's translate), its box, whether it is turned; and the axis's tick font size
DRAWN_TICKS = """([title, axis]) => {
  const plot = [...document.querySelectorAll('.js-plotly-plot')].find((g) => g.offsetParent !== null && g.layout
    && g.layout.title && new RegExp(title).test(g.layout.title.text || ''));
  if (!plot || !plot._fullLayout) return [];
  const font = plot._fullLayout[axis + 'axis'].tickfont.size;
  return [...plot.querySelectorAll(`.${axis}axislayer-above .${axis}tick text`)].map((t) => {
    const r = t.getBoundingClientRect(), transform = t.getAttribute('transform') || '';
    const at = (transform.match(/translate\\(([-\\d.]+),\\s*([-\\d.]+)\\)/) || [0, 0, 0]).slice(1).map(Number);
    return {text: t.textContent, at: axis === 'x' ? at[0] : at[1], left: r.left, right: r.right,
            turned: /rotate\\((?!0[,)])/.test(transform), font};
  });
}"""


def assert_every_label_drawn_apart(ticks: list[dict], expected: list[str], axis: str) -> None:
    """Each expected label drawn once, in order, none on top of the next: side by side, or (turned, or rows of a
    y axis) a line's height apart, Plotly's own rule (1.2 × the font)."""
    assert [t["text"] for t in ticks] == expected, [t["text"] for t in ticks]
    for a, b in zip(ticks, ticks[1:]):
        if axis == "x" and not a["turned"]:
            assert a["right"] <= b["left"] + 0.5, (a, b)
        else:
            assert abs(b["at"] - a["at"]) >= 1.2 * a["font"] - 0.5, (a, b)
    assert min(t["font"] for t in ticks) >= 12


# The tests below share one page 1,280 px wide (a laptop's), in this order: the default prompt's labels first, then
# a head typed into the boxes, then a 24-character prompt on the Attention tab, then a prompt on the Sampling tab.
@pytest.fixture(scope="module")
def narrow_page(browser, app_url):
    page = open_app(browser, app_url, width=1280)
    yield page
    page.context.close()


def type_prompt(page, text: str) -> None:
    """The shared prompt box, typed as a student does, and Shift+Enter: the open tab redraws with it."""
    box = page.get_by_label("Prompt").first
    box.fill(text)
    box.press("Shift+Enter")


def test_the_default_prompts_head_and_bars_draw_all_sixty_labels_apart(narrow_page):
    """The walk: the default prompt's head heatmap drew every second (queries) and every third (keys) label."""
    page = narrow_page
    for title, axis in (("attention pattern$", "x"), ("attention pattern$", "y"), ("^Where .* looks", "x")):
        drawn = page.evaluate(f"() => ({DRAWN_TICKS})(['{title}', '{axis}'])")
        texts = [t["text"] for t in drawn]
        assert [t.split(":")[0] for t in texts] == [str(i) for i in range(60)], (title, axis, texts)
        assert_every_label_drawn_apart(drawn, texts, axis)


def test_layer_and_head_typed_in_quick_succession_end_in_the_chart(narrow_page):
    """Typed into the sliders' number boxes one after the other, the boxes and the chart disagreed (a number
    entered with Enter, without leaving its box, sent nothing): the chart always ends on the last values."""
    page = narrow_page
    page.wait_for_function(f"({SELECTED_HEAD_TITLE})().includes('L0·H0')")
    layer_box, head_box = page.get_by_label("number input for Layer").first, page.get_by_label("number input for Head").first
    for layer, head in ((2, 3), (1, 2), (3, 1), (1, 3)):
        layer_box.fill(str(layer))
        page.keyboard.press("Tab")  # leaving the box sends its release
        head_box.fill(str(head))
        page.keyboard.press("Enter")  # committed in the box, which keeps the focus
    page.wait_for_function(f"({SELECTED_HEAD_TITLE})() === 'L1·H3 attention pattern'")
    page.wait_for_function("() => document.querySelectorAll('.eta-bar, .pending').length === 0")
    assert page.evaluate(SELECTED_HEAD_TITLE) == "L1·H3 attention pattern"  # and nothing redrew it after
    assert (layer_box.input_value(), head_box.input_value()) == ("1", "3")


def test_a_heads_heatmap_draws_every_key_and_query_label_apart(narrow_page):
    """a-real-model's "row 16 looks at piece 5" needs every label of its 24 pieces: Plotly drew every second one."""
    page = narrow_page
    prompt = "To be, or not to be: tha"  # 24 characters
    type_prompt(page, prompt)
    tokens = [f"{i}:{c}" for i, c in enumerate(prompt.replace(" ", "␣"))]
    expected = [f"{t[:-1]}“{t[-1]}”" if t[-1] in ",:␣" else t for t in tokens]  # thin marks, spaces in quotes
    for axis in ("x", "y"):
        page.wait_for_function(f"() => ({DRAWN_TICKS})(['attention pattern$', '{axis}']).length === {len(tokens)}")
        drawn = page.evaluate(f"() => ({DRAWN_TICKS})(['attention pattern$', '{axis}'])")
        assert_every_label_drawn_apart(drawn, expected, axis)


def test_the_next_token_chart_labels_all_thirty_bars(narrow_page):
    """temperature-top-p: 'i', 'a', 'r' and the space had bars without labels."""
    page = narrow_page
    page.get_by_label("Prompt").first.fill("ROMEO:\nI will th")  # before the tab, whose first chart reads it
    press(page, page.get_by_role("tab", name="Sampling"))
    press(page, visible(page.get_by_role("button", name="Show next-token distribution")))
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some((g) => g.layout && "
                           "g.layout.title && /filtering cut 0 of \\d+ tokens \\(top 30 shown\\)/.test(g.layout.title.text))")
    drawn = page.evaluate(f"() => ({DRAWN_TICKS})(['^Next-token probabilities', 'x'])")
    shown = [t["text"] for t in drawn]
    assert len(shown) == 30 and {"e", "i", "a", "r", "“␣”"} <= set(shown), shown
    assert_every_label_drawn_apart(drawn, shown, "x")
