"""python -m bench.hostile_class: one mischievous student against a class (issue #28), through gradio_client.

Each case launches the app fresh (python app.py), sets up a classmate (a browser-like session that changed its
model and typed a name) and a bystander (another session calling a view every second, or one heavy request), then
drives the case through the public API and reports: the time to the case's answer (a result or a sentence),
the server's RSS growth (its peak over the case against before it), the bystander's slowest answer, and whether
anything was lost (the classmate's model and name, the app itself). Targets: every case answered within 10 s,
RSS growth <= 600 MB, the bystander served within 5 s, nothing lost.

The app runs with its address space capped (--memory-cap-gb, RLIMIT_AS): a case that allocates without bound
fails inside the app rather than swapping the machine. --root runs another checkout's app.py (the same cases
against main, side by side). --cases picks some: python -m bench.hostile_class --cases c d."""
import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


from bench import hostile_cases  # noqa: E402
from bench.hostile_client import browser_session, new_client, private_call, timed_call  # noqa: E402
from bench.results import Row, at_most, check, run_main  # noqa: E402
from bench.server_process import ROOT, LaunchedApp, MemorySampler, rss_bytes  # noqa: E402

TEACHER_KEY = "hostile-class-teacher-key"
TARGETS = {"answer_s": 10.0, "rss_mb": 600.0, "bystander_s": 5.0}


class Classmate:
    """A page's session that holds work: another shipped model and a name; check() says what it lost."""

    def __init__(self, url: str):
        self.client = browser_session(url)
        self.client.predict(name="first-names", api_name="/use_shipped_model")
        ok, _ = private_call(url, self.client.session_hash, "set_name", ["Ana"])
        assert ok
        self.reference = self._view()

    def _view(self) -> str:
        return json.dumps(self.client.predict("emma", 0, 0, -1, True, api_name="/attention")[1])

    def check(self) -> str:
        try:
            return "" if self._view() == self.reference else "the classmate's model changed (session lost)"
        except Exception as err:  # noqa: BLE001
            return f"the classmate's call failed: {err}"


class Bystander(threading.Thread):
    """Another student calling /attention on a new prompt every second (no shared cache); records latencies."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.client, self.latencies, self.errors = new_client(url), [], []
        self.stopped = threading.Event()

    def run(self):
        i = 0
        while not self.stopped.is_set():
            i += 1
            seconds, ok, result = timed_call(self.client, "/attention", 60, prompt=f"ROMEO{'!' * (i % 20)}",
                                             layer=0, head=0, query=-1, drop_unknown=True)
            self.latencies.append(seconds)
            if not ok:
                self.errors.append(str(result)[:120])
            self.stopped.wait(1.0)

    def slowest(self) -> float:
        return max(self.latencies, default=float("nan"))


def run_case(name: str, args, folder: Path) -> dict:
    case = hostile_cases.CASES[name]
    app_args = [*case.app_args(folder), "--teacher-key", TEACHER_KEY, *args.app_args.split()]
    with LaunchedApp(app_args, root=args.root, memory_cap_gb=args.memory_cap_gb) as app:
        classmate = Classmate(app.url)
        context = hostile_cases.Context(app.url, folder, TEACHER_KEY)
        case.setup(context)
        before = rss_bytes(app.proc.pid)
        bystander = Bystander(app.url)
        with MemorySampler(app.proc.pid, interval=0.25) as sampler:
            bystander.start()
            began = time.monotonic()
            outcome = case.run(context)
            took = time.monotonic() - began
            bystander.stopped.set()
            bystander.join(70)
        alive = app.proc.poll() is None
        lost = "the app died" if not alive else classmate.check()
        app.remember(sampler.seen)
    slowest = max(bystander.slowest(), outcome.get("bystander_s", 0.0))
    return {"case": name, "title": case.title, "answer_s": outcome.get("answer_s", took), "answer": outcome["answer"],
            "rss_mb": (sampler.peak_server - before) / 1e6, "bystander_s": slowest,
            "bystander_alone_s": outcome.get("bystander_alone_s"),
            "bystander_errors": bystander.errors[:3], "lost": lost, "needs": case.needs,
            "load": os.getloadavg()[0]}


def verdict(row: dict) -> str:
    misses = [what for what, key in (("time", "answer_s"), ("memory", "rss_mb"), ("bystander", "bystander_s"))
              if not row[key] <= TARGETS[key]]
    misses += ["lost"] if row["lost"] else []
    return "✔" if not misses else "✘ " + ", ".join(misses)


def print_report(rows: list[dict]) -> None:
    print("| case | time to answer | answer | server RSS growth | bystander's slowest | lost | verdict |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        needs = f" (needs {r['needs']})" if r["needs"] and verdict(r) != "✔" else ""
        alone = f" (its /ablate alone: {r['bystander_alone_s']:.1f} s)" if r.get("bystander_alone_s") else ""
        print(f"| {r['case']}: {r['title']} | {r['answer_s']:.1f} s | {r['answer'][:140]} | {r['rss_mb']:+,.0f} MB | "
              f"{r['bystander_s']:.1f} s{alone} | {r['lost'] or 'nothing'} | {verdict(r)}{needs} |")
    print(f"\nTargets: answered within {TARGETS['answer_s']:g} s, RSS growth <= {TARGETS['rss_mb']:g} MB, bystander "
          f"within {TARGETS['bystander_s']:g} s, nothing lost. Load average (1 min) at each case's end: "
          + ", ".join(f"{r['load']:.1f}" for r in rows))


def case_rows(row: dict) -> list[Row]:
    """One case's targets as result rows."""
    case = f"case {row['case']}"
    return [at_most(f"{case}: time to the answer", row["answer_s"], "s", TARGETS["answer_s"]),
            at_most(f"{case}: server RSS growth", row["rss_mb"], "MB", TARGETS["rss_mb"]),
            at_most(f"{case}: the bystander's slowest answer", row["bystander_s"], "s", TARGETS["bystander_s"]),
            check(f"{case}: what was lost", row["lost"] or "nothing", "nothing lost", not row["lost"])]


def measure(argv=None) -> list[Row]:
    p = argparse.ArgumentParser(prog="python -m bench.hostile_class", description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="*", default=list(hostile_cases.CASES), help="cases to run (default: all)")
    p.add_argument("--root", type=Path, default=ROOT, help="the checkout whose app.py runs (default: this one)")
    p.add_argument("--memory-cap-gb", type=float, default=8.0, help="the app's address-space cap (RLIMIT_AS)")
    p.add_argument("--app-args", default="", help="extra app.py flags")
    p.add_argument("--json", metavar="PATH", help="also write the rows to this file")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: the app stopped, the files removed
    rows = []
    with tempfile.TemporaryDirectory(prefix="hostile-class-") as tmp:
        folder = Path(tmp)
        hostile_cases.write_files(folder)
        for name in args.cases:
            print(f"case {name} ...", flush=True)
            rows.append(run_case(name, args, folder))
            print(json.dumps(rows[-1], default=str), flush=True)
    print_report(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return [r for row in rows for r in case_rows(row)]


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
