"""What the Playwright tests share (the browser and page fixtures are in conftest.py): where Chromium is, how
long to wait, and how to read the visible tab's state, its error toasts and a screenshot."""
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
ERROR_TOAST = ".toast-body.error"
# the page inspects SmolLM2 (its model line names it once it is open)
SMOLLM2_OPEN = "() => document.querySelector('#te-model-info')?.innerText.includes('Inspecting SmolLM2')"
TIMEOUT_MS = 90_000

# Gradio keeps a visited tab's panel in the page with an inline display: none. Read from that attribute, not from
# the layout (offsetParent): polled every 50 ms, a forced layout of a page of 9,000 elements cost 20-90 ms each.
VISIBLE_PANEL = "[...document.querySelectorAll('[role=tabpanel]')].find(p => p.style.display !== 'none')"
PANEL_STATE = f"""() => {{
  const panel = {VISIBLE_PANEL};
  if (!panel) return {{plots: 0, busy: 1}};
  const plots = [...panel.querySelectorAll('.js-plotly-plot')].filter(g => g.data && g.data.length > 0).length;
  const busy = panel.querySelectorAll('.eta-bar, .pending').length;
  return {{plots, busy}};
}}"""


def wait_until_idle(page, min_plots: int) -> dict:
    """Wait until the visible tab has no event running and min_plots charts drawn (press() a button first, so
    that its event has started)."""
    page.wait_for_function(f"() => {{ const s = ({PANEL_STATE})(); return s.busy === 0 && s.plots >= {min_plots}; }}")
    painted(page)
    return page.evaluate(PANEL_STATE)


def painted(page) -> None:
    """Until the page has painted twice since now: Plotly has laid out what arrived, so a screenshot shows it."""
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")


def press(page, button, seconds_to_start: float = 5.0) -> None:
    """Click a button and wait until the event it starts has finished and painted: the click's request to the
    server's queue is awaited (a button that starts none is waited for seconds_to_start at most), then the
    visible tab's progress indicators."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        with page.expect_request(lambda r: "/gradio_api/queue/join" in r.url or "/gradio_api/run/" in r.url,
                                 timeout=seconds_to_start * 1000):
            button.click()
    except PlaywrightTimeout:  # a button handled in the page alone
        pass
    page.wait_for_function(f"() => ({PANEL_STATE})().busy === 0")
    painted(page)


def error_toasts(page) -> list[str]:
    return [t.inner_text() for t in page.locator(f"{ERROR_TOAST} [data-testid=toast-text]").all()]


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def visible(locator):
    return locator.locator("visible=true").first


# Gradio's spinners and progress bars animate for as long as an event runs: in a headless test that only repaints,
# and with minutes of waiting on two shared cores it took CPU from the server being tested. Ended at once instead.
STILL = """document.addEventListener('DOMContentLoaded', () => {
  const style = document.createElement('style');
  style.textContent = '*, *::before, *::after { animation-duration: 0s !important; animation-delay: 0s !important;'
    + ' animation-iteration-count: 1 !important; }';
  document.head.appendChild(style);
});"""


POLL_MS = 50  # how often a page.wait_for_function condition is checked


def polling_on_a_clock() -> None:
    """page.wait_for_function checks its condition every POLL_MS unless told otherwise. Playwright's default checks
    it on every animation frame, which keeps a waiting page painting 60 frames a second: twice the CPU of a page
    at rest, for every minute a test waits on two shared cores."""
    from playwright.sync_api import Page

    original = Page.wait_for_function
    if getattr(original, "polls_every", None):
        return

    def wait_for_function(self, expression, *, arg=None, timeout=None, polling=None):
        return original(self, expression, arg=arg, timeout=timeout, polling=POLL_MS if polling is None else polling)

    wait_for_function.polls_every = POLL_MS
    Page.wait_for_function = wait_for_function


def still_pages(browser) -> None:
    """Every context the browser opens from now on loads its pages with STILL."""
    open_context = browser.new_context

    def new_context(**options):
        context = open_context(**options)
        context.add_init_script(STILL)
        return context
    browser.new_context = new_context


# Text cut off by its box: in the visible tab panel and the lesson box, a visible element with text of its own that
# either hides an overflow it has (overflow hidden/clip or an ellipsis, scrollWidth > clientWidth + 1) or reaches
# past the box of the nearest ancestor that clips it. What scrolls on purpose (overflow auto/scroll, a textarea or
# input), a box of no height (hidden on purpose) and chart text (SVG, laid out by Plotly) are not looked at.
CLIPPED_TEXTS = f"""() => {{
  const roots = [{VISIBLE_PANEL}, ...['#te-lesson-title', '#te-lesson-text', '#te-question']
    .map(s => document.querySelector(s))].filter(r => r && r.getClientRects().length);
  const clips = v => v === 'hidden' || v === 'clip';
  const scrolls = v => v === 'auto' || v === 'scroll';
  const ownText = el => [...el.childNodes].filter(n => n.nodeType === 3 && n.textContent.trim());
  const textBox = nodes => {{ const r = document.createRange(); r.setStartBefore(nodes[0]);
    r.setEndAfter(nodes[nodes.length - 1]); return r.getBoundingClientRect(); }};
  const name = el => (el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 80);
  const found = new Set();
  for (const root of roots) for (const el of root.querySelectorAll('*')) {{
    if (el.closest('svg, textarea, input, select, .js-plotly-plot') || !el.getClientRects().length) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.opacity === '0') continue;
    const text = ownText(el);
    const own = el.getBoundingClientRect();
    if (!text.length || own.width <= 1 || own.height <= 1) continue;  // a 1 px box: a hint for screen readers
    const cutsItself = (clips(style.overflowX) || style.textOverflow === 'ellipsis') && !scrolls(style.overflowX);
    if (cutsItself && el.scrollWidth > el.clientWidth + 1) {{
      found.add(`"${{name(el)}}" (${{el.tagName.toLowerCase()}}: ${{el.clientWidth}} of ${{el.scrollWidth}} px shown)`);
      continue;
    }}
    let box = el.parentElement;  // the nearest ancestor that clips or scrolls its content
    while (box && box !== document.body) {{
      const s = getComputedStyle(box);
      if (clips(s.overflowX) || clips(s.overflowY) || scrolls(s.overflowX) || scrolls(s.overflowY)) break;
      box = box.parentElement;
    }}
    if (!box || box === document.body) continue;
    const s = getComputedStyle(box);
    const t = textBox(text), b = box.getBoundingClientRect();
    if (b.width < 1 || b.height < 1) continue;  // a box hidden on purpose (a table's row that measures columns)
    const cutX = clips(s.overflowX) && (t.left < b.left - 1 || t.right > b.right + 1);
    const cutY = clips(s.overflowY) && (t.top < b.top - 1 || t.bottom > b.bottom + 1);
    if ((cutX || cutY) && t.width > 0) found.add(`"${{name(el)}}" (${{el.tagName.toLowerCase()}}: outside its box, `
      + `${{Math.round(t.width)}}×${{Math.round(t.height)}} px text in ${{Math.round(b.width)}}×${{Math.round(b.height)}})`);
  }}
  return [...found];
}}"""


def clipped_texts(page) -> list[str]:
    """The texts of the visible tab panel and the lesson box that their boxes cut off, each with what cuts it
    (empty when every text shows whole)."""
    return page.evaluate(CLIPPED_TEXTS)
