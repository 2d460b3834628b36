"""What the Playwright tests share (the browser and page fixtures are in conftest.py): where Chromium is, how
long to wait, and how to read the visible tab's state, its error toasts and a screenshot."""
import time
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
    """Wait for the visible tab's event to start (if we catch it) and finish with min_plots charts drawn."""
    try:
        page.wait_for_function(f"() => ({PANEL_STATE})().busy > 0", timeout=3000)
    except Exception:  # noqa: BLE001 - it may have finished before we looked
        pass
    page.wait_for_function(f"() => {{ const s = ({PANEL_STATE})(); return s.busy === 0 && s.plots >= {min_plots}; }}")
    time.sleep(0.5)  # let Plotly finish laying out before the screenshot
    return page.evaluate(PANEL_STATE)


def error_toasts(page) -> list[str]:
    return [t.inner_text() for t in page.locator(f"{ERROR_TOAST} [data-testid=toast-text]").all()]


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def visible(locator):
    return locator.locator("visible=true").first
