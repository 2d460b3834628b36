"""python -m bench.hub_class [--students N] [--steps S] [--json PATH]: a course on the shipped one-machine JupyterHub
(deploy/jupyterhub/jupyterhub_config.py, issue #42), everything through the hub's proxy.

First one student alone: JupyterLab open in Chromium, the time from clicking the Transformer Explorer tile to the
first chart (their explorer starts on that click), a short training run, then the memory of their idle server once
its training forkserver has ended (every process of it, PSS). Then the class: N-1 more students log in through the
hub's form at once; each visit starts their server and explorer, asks /attention and trains S + i steps (so every
run is told apart), while a last student clicks the tile in Chromium: the tile's time under that load is the
headline, alone beside it. An instructor's teacher page must list all N with their runs. Targets: every /attention
answered, 0 errors, every student's status their own run, all N listed within 10 s of the last run's end, an idle
student server <= 600 MB PSS, tile to first chart <= 15 s."""
import argparse
import concurrent.futures
import json
import math
import os
import statistics
import tempfile
import time
import traceback
from pathlib import Path

from gradio_client import Client

from bench.local_hub import SERVICE, LocalHub, proxy_installed
from bench.results import Row, Skipped, at_most, check, info, run_main
from bench.server_process import descendants, pss_bytes

LISTED_WITHIN = 10.0  # s from the last run's end until the teacher page lists every student with a run
PSS_TARGET_MB, TILE_TARGET_S = 600.0, 15.0
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
FIRST_CHART = "() => [...document.querySelectorAll('.js-plotly-plot')].some(g => g.data && g.data.length > 0)"
IDLE_WAIT = 65.0  # s: a single-user server ends its forkserver after 60 s without a run (explorer.server.launch)
# a tiny run, by keyword (the endpoint's other parameters keep their defaults)
TINY_RUN = dict(corpus="first-names", kind="char", n_layers=1, n_heads=2, d_model=16, block_size=8, batch_size=8,
                lr=0.01, warmup_steps=5, eval_interval=10)


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.hub_class", description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=20)
    p.add_argument("--steps", type=int, default=40, help="training steps of the first student (then +1 each)")
    p.add_argument("--json", metavar="PATH", help="write every number measured here")
    return p.parse_args(argv)


def student_work(hub: LocalHub, name: str, steps: int) -> dict:
    """Log in, open the explorer, /attention, train -> {name, open_s, attention_s, train_s, status, error}."""
    out = {"name": name, "steps": steps}
    try:
        session = hub.login(name)
        out["open_s"] = hub.open_explorer(session, name)
        client = Client(hub.explorer_url(name), headers=hub.cookie_header(session), verbose=False)
        began = time.monotonic()
        client.predict(prompt="ROMEO:", layer=1, api_name="/attention")
        out["attention_s"] = time.monotonic() - began
        out.update(train(client, steps))
    except Exception as err:  # noqa: BLE001 - counted and reported: the class goes on
        out["error"] = f"{type(err).__name__}: {err}"[:300]
        traceback.print_exc()
    return out


def train(client: Client, steps: int) -> dict:
    began = time.monotonic()
    started = client.predict(**TINY_RUN, max_steps=steps, api_name="/train_start")
    if not str(started).startswith("Training started"):
        raise RuntimeError(f"Start did not start: {str(started)[:300]}")
    while "finished" not in (status := client.predict(api_name="/train_status")[1]):
        if "error" in status or time.monotonic() - began > 600:
            raise RuntimeError(f"the run did not finish: {status[:200]}")
        time.sleep(0.5)
    return {"train_s": time.monotonic() - began, "ended_at": time.monotonic(), "status": status}


def tile_to_chart(browser, hub: LocalHub, name: str) -> float:
    """Seconds from the click on the JupyterLab tile to the explorer's first chart, for a logged-in student."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(300_000)
    page = context.new_page()
    page.goto(f"{hub.url}/hub/login?next=")
    page.locator("#username_input").fill(name)
    page.locator("#password_input").fill("any")
    page.locator("#login_submit").click()
    tile = page.locator(".jp-LauncherCard", has_text="Transformer Explorer")
    tile.wait_for()
    with page.context.expect_page() as opened:
        began = time.monotonic()
        tile.click()
    explorer = opened.value
    explorer.wait_for_function(FIRST_CHART, polling=100)
    seconds = time.monotonic() - began
    page.context.close()
    return seconds


def server_trees(hub: LocalHub) -> dict[str, list[int]]:
    """{hub user: the pids of their server and everything below it}."""
    trees = {}
    for pid in descendants(hub.proc.pid):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        user = next((e.split(b"=", 1)[1].decode() for e in environ if e.startswith(b"JUPYTERHUB_USER=")), None)
        if user and b"jupyterhub.singleuser" in command:
            trees[user] = [pid, *descendants(pid)]
    return trees


def tree_pss_mb(pids: list[int]) -> float:
    return sum(pss_bytes(pid) for pid in pids) / 2 ** 20


def listed_after(hub: LocalHub, names: list[str], last_end: float) -> tuple[float, dict]:
    """Seconds from last_end until the teacher page lists every name with a run, and the view it listed them in."""
    teacher = hub.login("prof", next_path=f"/services/{SERVICE}/")
    xsrf = hub.xsrf_of_page(teacher)
    while True:
        view = teacher.get(hub.service_url("teacher/api/class"), headers={"X-XSRFToken": xsrf}).json()
        with_runs = {row["id"] for row in view["students"] if row["run"] and row["run"]["state"] == "finished"}
        if set(names) <= with_runs or time.monotonic() - last_end > 120:
            return time.monotonic() - last_end, view
        time.sleep(0.2)


def measure(argv=None) -> list[Row]:
    args = parse_args(argv)
    if not proxy_installed():
        raise Skipped("configurable-http-proxy is not installed (`make test` installs it with npm)")
    from playwright.sync_api import sync_playwright

    names = [f"student{i:02d}" for i in range(1, args.students + 1)]
    numbers: dict = {"students": args.students, "cpu": cpu_name()}
    with tempfile.TemporaryDirectory(prefix="hub-bench-") as folder, LocalHub(Path(folder)) as hub, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # one student alone: the tile, a run, an idle server's memory
        numbers["tile_alone_s"] = tile_to_chart(browser, hub, names[0])
        first = student_work(hub, names[0], args.steps)
        time.sleep(IDLE_WAIT)
        numbers["pss_alone_mb"] = tree_pss_mb(server_trees(hub)[names[0]])
        # the class arrives at once; the last student clicks the tile meanwhile
        with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
            work = [pool.submit(student_work, hub, name, args.steps + i) for i, name in enumerate(names[1:-1], 1)]
            numbers["tile_loaded_s"] = tile_to_chart(browser, hub, names[-1])
            results = [first, *(w.result() for w in work)]
        results.append(student_work(hub, names[-1], args.steps + len(names) - 1))
        browser.close()
        ended = [r["ended_at"] for r in results if "ended_at" in r]
        numbers["listed_s"], view = listed_after(hub, names, max(ended) if ended else time.monotonic())
        time.sleep(IDLE_WAIT)
        trees = server_trees(hub)
        numbers["pss_class_mb"] = sorted(round(tree_pss_mb(pids), 1) for pids in trees.values())
        numbers["load_after"] = [round(x, 2) for x in os.getloadavg()]
    numbers["results"] = [{k: v for k, v in r.items() if k != "ended_at"} for r in results]
    numbers["listed"] = sorted(row["id"] for row in view["students"])
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=1, default=str))
    return rows_of(numbers, results, view, names)


def rows_of(numbers: dict, results: list[dict], view: dict, names: list[str]) -> list[Row]:
    errors = [r for r in results if "error" in r]
    own = [r for r in results if "status" in r and f"step **{r['steps']} / {r['steps']}**" in r["status"]]
    steps = {row["id"]: row["model"]["steps"] for row in view["students"]}
    listed_right = all(steps.get(r["name"]) == r["steps"] for r in results if "status" in r)
    attention = sorted(r["attention_s"] for r in results if "attention_s" in r) or [float("nan")]
    opened = sorted(r["open_s"] for r in results if "open_s" in r) or [float("nan")]
    pss = numbers["pss_class_mb"] or [float("nan")]
    return [
        check("students whose /attention answered", sum(map(math.isfinite, attention)), f"= {len(names)}",
              sum(map(math.isfinite, attention)) == len(names)),
        check("errors", len(errors), "= 0", not errors),
        check("students whose status is their own run", len(own), f"= {len(names)}", len(own) == len(names)),
        check("teacher page lists every student with their run's steps", listed_right, "yes", listed_right),
        at_most("teacher page lists all after the last run ends", numbers["listed_s"], "s", LISTED_WITHIN),
        at_most("tile to first chart, the class arriving", numbers["tile_loaded_s"], "s", TILE_TARGET_S),
        info("tile to first chart, alone", round(numbers["tile_alone_s"], 1), "s"),
        at_most("idle student server after a run, alone on the machine (PSS, all its processes)",
                round(numbers["pss_alone_mb"]), "MB", PSS_TARGET_MB),
        info("idle student server, median of the class (PSS; shared pages split)", round(statistics.median(pss)), "MB"),
        info("open a student's explorer (spawn + app), median / max", f"{statistics.median(opened):.1f} / "
             f"{max(opened):.1f}", "s"),
        info("first /attention through the proxy, median / max", f"{statistics.median(attention):.2f} / "
             f"{max(attention):.2f}", "s"),
        info("CPU", numbers["cpu"]),
    ]


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
