"""python -m bench.classroom: a class of students on one launched app, through gradio_client.

--trainers sessions start the Train tab's default run and poll its status every second; the other sessions
loop over Attention, Residual, next-token and Compare (the app's defaults: its prompt, 4 settings x 150
tokens) with --think seconds of reading (±50 %, seeded) between calls. Half of those switch to the shipped
first-names model first, so a result from another session's model shows as cross-talk. Then one session
alone runs the same calls on the same server. Each gradio_client.Client is one browser session (one
session_hash per Client); each session runs in its own thread."""
import argparse
import json
import os
import random
import threading
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from gradio_client import Client  # noqa: E402

from bench.classroom_checks import ANALYSIS, MODELS, fingerprint, reference_fingerprints  # noqa: E402
from bench.classroom_report import print_report, summary  # noqa: E402
from bench.server_process import LaunchedApp, MemorySampler  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Drive the launched app like a class and report latencies.")
    p.add_argument("--sessions", type=int, default=30, help="browser sessions in the class, trainers included")
    p.add_argument("--trainers", type=int, default=2, help="sessions that train (the Train tab's default run)")
    p.add_argument("--seconds", type=float, default=60.0, help="how long the class works")
    p.add_argument("--think", type=float, default=5.0, help="mean reading time between an analyser's calls")
    p.add_argument("--ramp", type=float, default=5.0, help="sessions start evenly over this many seconds")
    p.add_argument("--alone-rounds", type=int, default=5, help="rounds of the four calls for one session alone")
    p.add_argument("--call-timeout", type=float, default=120.0, help="a call slower than this is an error")
    p.add_argument("--seed", type=int, default=0, help="seeds the reading times")
    p.add_argument("--json", metavar="PATH", help="also write the numbers to this file")
    p.add_argument("--app-args", default="", help="extra app.py flags, e.g. \"--torch-threads 2 --analysis-workers 4\"")
    return p.parse_args(argv)


class Tally:
    """Latencies, errors and cross-talk of many sessions, recorded from their threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = {}
        self.errors: list[str] = []
        self.crosstalk: list[str] = []
        self.timeline: list[tuple[str, float, float]] = []  # (endpoint, start since the epoch, seconds taken)

    def call(self, client: Client, who: str, endpoint: str, args: list, timeout: float):
        """The endpoint's result, or None after recording the exception as an error."""
        start = time.perf_counter()
        try:
            job = client.submit(*args, api_name=f"/{endpoint}")
            try:
                result = job.result(timeout=timeout)
            except TimeoutError:
                job.cancel()
                raise TimeoutError(f"no answer within {timeout:g} s") from None
        except Exception as err:  # any failure a student would see counts
            first_line = (str(err).strip().splitlines() or [""])[0][:200]
            with self.lock:
                self.errors.append(f"{who} /{endpoint}: {type(err).__name__}: {first_line}")
            return None
        took = time.perf_counter() - start
        with self.lock:
            self.latencies.setdefault(endpoint, []).append(took)
            self.timeline.append((endpoint, time.time() - took, took))
        return result

    def flag(self, who: str, what: str) -> None:
        with self.lock:
            self.crosstalk.append(f"{who}: {what}")


class Classroom:
    """One class run: settings, the endpoints' default arguments and reference fingerprints, the tally."""

    def __init__(self, url: str, args: argparse.Namespace, defaults: dict, references: dict):
        self.url, self.args, self.defaults, self.references = url, args, defaults, references
        self.tally = Tally()
        self.end = 0.0

    def connect(self) -> Client:
        return Client(self.url, verbose=False)

    def arguments(self, endpoint: str, model: str) -> list:
        return call_arguments(self.defaults, endpoint, model)

    def analyst(self, index: int, model: str, rng: random.Random) -> None:
        who = f"analyst {index} ({model})"
        client = self.connect()
        try:
            if model != MODELS[0]:
                summary_text = self.tally.call(client, who, "use_shipped_model", [model], self.args.call_timeout)
                if summary_text is not None and f"**{model}**" not in summary_text:
                    self.tally.flag(who, f"/use_shipped_model answered {summary_text[:80]!r}")
            max_calls = int(self.args.seconds / 0.05) + 10  # a bound even if every call failed at once
            for k in range(index, index + max_calls):
                if time.monotonic() >= self.end:
                    break
                endpoint = ANALYSIS[k % len(ANALYSIS)]
                result = self.tally.call(client, who, endpoint, self.arguments(endpoint, model),
                                         self.args.call_timeout)
                self.check(who, model, endpoint, result)
                time.sleep(max(0.0, min(self.args.think * rng.uniform(0.5, 1.5), self.end - time.monotonic())))
        finally:
            client.close()

    def check(self, who: str, model: str, endpoint: str, result) -> None:
        if result is None:
            return
        got, want = fingerprint(endpoint, result), self.references[model][endpoint]
        if got != want:
            self.tally.flag(who, f"/{endpoint} looks like another model: {str(got)[:100]} != {str(want)[:100]}")

    def trainer(self, index: int) -> None:
        """Start the Train tab's default run (steps lowered by 100 per trainer, so each status names its own
        run), poll /train_status every second until the class ends, then stop the run."""
        who = f"trainer {index}"
        client = self.connect()
        values = [p["parameter_default"] for p in self.defaults["train_start"]]
        steps_at = next(i for i, p in enumerate(self.defaults["train_start"]) if p["label"] == "Steps")
        values[steps_at] = max(100, int(values[steps_at]) - 100 * index)
        own_total = f"/ {values[steps_at]:,}**"
        try:
            if self.tally.call(client, who, "train_start", values, self.args.call_timeout) is None:
                return
            for _ in range(int(self.args.seconds) + 10):
                if time.monotonic() >= self.end:
                    break
                tick = time.monotonic()
                status = self.tally.call(client, who, "train_status", [], self.args.call_timeout)
                if status is not None and "step **" in status[1] and own_total not in status[1]:
                    self.tally.flag(who, f"/train_status shows another run: {status[1][:80]!r}")
                time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
            self.tally.call(client, who, "train_stop", [], self.args.call_timeout)
            wait_until_stopped(client, self.args.call_timeout)
        finally:
            client.close()


def wait_until_stopped(client: Client, timeout: float) -> None:
    """Poll the session's run until it reports stopped or finished (at most timeout seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.predict(api_name="/train_status")[1]
        if any(word in status for word in ("stopped", "finished", "error")):
            return
        time.sleep(0.5)


def run_class(room: Classroom) -> Tally:
    """Every session in its own thread, started evenly over --ramp seconds; returns when all have ended."""
    a = room.args
    rng = random.Random(a.seed)
    threads = []
    room.end = time.monotonic() + a.seconds
    for i in range(a.sessions):
        if i < a.trainers:
            target, extra = room.trainer, ()
        else:
            model = MODELS[(i - a.trainers) % 2]
            target, extra = room.analyst, (model, random.Random(rng.random()))
        threads.append(threading.Thread(target=target, args=(i, *extra), name=f"session-{i}", daemon=True))
    for i, thread in enumerate(threads):
        time.sleep(a.ramp / max(1, a.sessions) if i else 0)
        thread.start()
    deadline = time.monotonic() + a.seconds + 3 * a.call_timeout + 30
    for thread in threads:
        thread.join(timeout=max(0.1, deadline - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    if stuck:
        room.tally.errors.append(f"sessions still running at the deadline: {', '.join(stuck)}")
    return room.tally


def run_alone(url: str, args: argparse.Namespace, defaults: dict, references: dict) -> Tally:
    """One session (the default model) running the four calls --alone-rounds times, half a second apart."""
    solo = Classroom(url, argparse.Namespace(**{**vars(args), "think": 0.5}), defaults, references)
    client = solo.connect()
    try:
        for k in range(args.alone_rounds * len(ANALYSIS)):
            endpoint = ANALYSIS[k % len(ANALYSIS)]
            result = solo.tally.call(client, "alone", endpoint, solo.arguments(endpoint, MODELS[0]),
                                     args.call_timeout)
            solo.check("alone", MODELS[0], endpoint, result)
            time.sleep(0.5)
    finally:
        client.close()
    return solo.tally


def call_arguments(defaults: dict, endpoint: str, model: str) -> list:
    """The endpoint's defaults; for a model other than the app's default, unknown characters dropped (the
    default prompt has capitals and spaces the first-names vocabulary lacks)."""
    return [True if p["label"] == "Drop unknown characters" and model != MODELS[0] else p["parameter_default"]
            for p in defaults[endpoint]]


def endpoint_defaults(url: str) -> dict:
    """{endpoint: its parameters as /info describes them (label, parameter_default, ...)}."""
    client = Client(url, verbose=False)
    try:
        api = client.view_api(return_format="dict", print_info=False)
    finally:
        client.close()
    return {name.lstrip("/"): e["parameters"] for name, e in api["named_endpoints"].items()}


def main(argv=None) -> None:
    args = parse_args(argv)
    if not 0 <= args.trainers <= args.sessions:
        raise SystemExit("--trainers must be between 0 and --sessions")
    server_flags = ["--max-trainers", str(max(2, args.trainers)), "--max-sessions", str(max(64, args.sessions + 8)),
                    *args.app_args.split()]
    with LaunchedApp(server_flags) as app, MemorySampler(app.proc.pid) as memory:
        try:
            print(f"app on {app.url} (pid {app.proc.pid}), log {app.log}", flush=True)
            defaults = endpoint_defaults(app.url)
            references = reference_fingerprints(app.url, lambda e, m: call_arguments(defaults, e, m))
            print(f"class: {args.sessions} sessions ({args.trainers} training) for {args.seconds:g} s ...", flush=True)
            class_tally = run_class(Classroom(app.url, args, defaults, references))
            class_peak = memory.peak
            print("one session alone ...", flush=True)
            alone_tally = run_alone(app.url, args, defaults, references)
        finally:
            app.remember(memory.seen)
    numbers = summary(args, class_tally, alone_tally, class_peak, memory, len(app.outlived))
    print_report(numbers)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(numbers, f, indent=1)


if __name__ == "__main__":
    main()
