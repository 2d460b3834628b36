"""How long `python app.py` takes to answer, against `python -c "import gradio"` on the same machine.

    python -m bench.startup [--rounds 5] [--browser]

Each round runs, in alternating order: a fresh interpreter that imports gradio and exits (its wall time is
the yardstick), and `python app.py` on a free port, timed from the spawn to its first HTTP 200 on GET /
(polled every 10 ms). With --browser, the app's round goes on in headless Chromium (started before the
clock): the page is opened as soon as the server answers, and the clock stops when the Attention tab has
drawn its charts. Target: first 200 within 1.2x the gradio import (medians and the median of per-round ratios)."""
import argparse
import http.client
import os
import statistics
import subprocess
import sys
import time

from bench.results import Row, at_most, info, run_main
from bench.server_process import ROOT, free_port
from bench.timing import print_table

ENV = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1"}
TARGET = 1.2
CHROMIUM = "/usr/bin/chromium"
ATTENTION_DRAWN = """() => {
  const panel = [...document.querySelectorAll('[role=tabpanel]')].find(p => p.offsetParent !== null);
  return !!panel && [...panel.querySelectorAll('.js-plotly-plot')].filter(g => g.data && g.data.length).length >= 4;
}"""


def import_gradio_seconds() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import gradio"], env=ENV, check=True, cwd=ROOT)
    return time.perf_counter() - start


def answers(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        connection.request("GET", "/")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def app_round(page=None, timeout: float = 120.0) -> tuple[float, float | None]:
    """(seconds from spawn to the first 200, seconds from spawn to the Attention tab drawn or None)."""
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not answers(port):
            if proc.poll() is not None or time.perf_counter() - start > timeout:
                raise RuntimeError(f"the app did not answer on port {port} (exit code {proc.poll()})")
            time.sleep(0.01)
        first_200 = time.perf_counter() - start
        drawn = None
        if page is not None:
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_function(ATTENTION_DRAWN, timeout=timeout * 1000)
            drawn = time.perf_counter() - start
        return first_200, drawn
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def measure_rounds(rounds: int, page=None) -> list[tuple[float, float, float | None]]:
    """[(import gradio s, first 200 s, Attention drawn s or None)] per round; the order alternates."""
    import_gradio_seconds()  # warm the file cache and the .pyc files of both
    app_round()
    results = []
    for r in range(rounds):
        if r % 2 == 0:
            baseline = import_gradio_seconds()
            first_200, drawn = app_round(page)
        else:
            first_200, drawn = app_round(page)
            baseline = import_gradio_seconds()
        results.append((baseline, first_200, drawn))
        print(f"round {r + 1}: import gradio {baseline:.2f} s, app first 200 {first_200:.2f} s "
              f"({first_200 / baseline:.2f}x)" + (f", Attention drawn {drawn:.2f} s" if drawn else ""), flush=True)
    return results


def report(results) -> list[Row]:
    """Print the table; the rows: medians, and the median of per-round ratios judged against TARGET."""
    median = lambda i: statistics.median(r[i] for r in results)  # noqa: E731
    ratio = statistics.median(r[1] / r[0] for r in results)
    table = [["python -c 'import gradio'", f"{median(0):.2f}", ""],
             ["python app.py: first HTTP 200", f"{median(1):.2f}",
              f"{ratio:.2f}x the import (target <= {TARGET}x): {'met' if ratio <= TARGET else 'MISSED'}"]]
    rows = [info("python -c 'import gradio', median", median(0), "s"),
            info("python app.py to its first HTTP 200, median", median(1), "s"),
            at_most("python app.py's first HTTP 200 / the gradio import (median of rounds)", ratio, "x", TARGET)]
    if results[0][2] is not None:
        table.append(["python app.py: Attention tab drawn in Chromium", f"{median(2):.2f}", ""])
        rows.append(info("python app.py to the Attention tab drawn in Chromium, median", median(2), "s"))
    print_table(f"Start-up, median of {len(results)} alternating rounds, load {os.getloadavg()[0]:.2f}",
                ["measurement", "seconds", ""], table)
    return rows


def measure(argv=None) -> list[Row]:
    p = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--browser", action="store_true", help="also time the first Attention view in Chromium")
    args = p.parse_args(argv)
    if not args.browser:
        return report(measure_rounds(args.rounds))
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        rows = report(measure_rounds(args.rounds, context.new_page()))
        browser.close()
    return rows


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    sys.exit(main())
