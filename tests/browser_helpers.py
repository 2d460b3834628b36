"""What the Playwright tests share (the browser and page fixtures are in conftest.py): where Chromium is, how
long to wait, and how to read the visible tab's state, its error toasts and a screenshot."""
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
ERROR_TOAST = ".toast-body.error"
TIMEOUT_MS = 90_000

VISIBLE_PANEL = "[...document.querySelectorAll('[role=tabpanel]')].find(p => p.offsetParent !== null)"
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


def still_pages(browser) -> None:
    """Every context the browser opens from now on loads its pages with STILL."""
    open_context = browser.new_context

    def new_context(**options):
        context = open_context(**options)
        context.add_init_script(STILL)
        return context
    browser.new_context = new_context
