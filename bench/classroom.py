"""python -m bench.classroom: a class of students on one launched app, through gradio_client.

Every session works on a model of its own, as in a class where everyone has trained or uploaded one: --trainers
sessions start the Train tab's default run and poll its status every second; every other session first uploads
a checkpoint of its own through /load_model (the shipped Shakespeare model with seeded noise on its weights,
bench/classroom_models.py), then loops over Attention, Residual, next-token and Compare (the app's defaults:
its prompt, 4 settings x 150 tokens) with --think seconds of reading (±50 %, seeded) between calls. So no answer
can come from the server's cache of shipped-model results (checked: no two sessions get the same answer, and
none gets the shipped model's). --shared-model is the easy case beside it: the analysers stay on the shipped
models (half switch to first-names, so another model's result shows as cross-talk) and share cached answers.
First one session alone runs the same calls on its own model (the default model with --shared-model), then
the class. Each gradio_client.Client is one browser session (one session_hash per Client), in its own thread."""
import argparse
import contextlib
import json
import os
import random
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from gradio_client import Client, handle_file  # noqa: E402

from bench.classroom_checks import (  # noqa: E402
    ANALYSIS,
    MODELS,
    Answers,
    answer_digest,
    fingerprint,
    reference_fingerprints,
    run_progress,
)
from bench.classroom_report import print_report, summary, target_rows  # noqa: E402
from bench.results import Row, run_main  # noqa: E402
from bench.server_process import LaunchedApp, MemorySampler, descendants, pss_bytes, rss_bytes  # noqa: E402

# Own models: noise std as a fraction of each weight tensor's std. 0.05 raises the shipped Shakespeare model's
# loss by ~0.01 (1.646 -> 1.655): every answer changes, the text still reads as Shakespeare.
NOISE = 0.05


def parser() -> argparse.ArgumentParser:
    """The class's flags (bench.teacher adds its own to them)."""
    p = argparse.ArgumentParser(description="Drive the launched app like a class and report latencies.")
    p.add_argument("--sessions", type=int, default=30, help="browser sessions in the class, trainers included")
    p.add_argument("--trainers", type=int, default=2, help="sessions that train (the Train tab's default run)")
    p.add_argument("--seconds", type=float, default=60.0, help="how long the class works")
    p.add_argument("--think", type=float, default=5.0, help="mean reading time between an analyser's calls")
    p.add_argument("--ramp", type=float, default=5.0, help="sessions start evenly over this many seconds")
    p.add_argument("--alone-rounds", type=int, default=5, help="rounds of the four calls for one session alone")
    p.add_argument("--call-timeout", type=float, default=120.0, help="a call slower than this is an error")
    p.add_argument("--seed", type=int, default=0, help="seeds the reading times and the own models' noise")
    p.add_argument("--shared-model", action="store_true",
                   help="the easy case: analysers inspect the shipped models and share the server's cached answers "
                        "(default: each uploads a model of its own first)")
    p.add_argument("--noise", type=float, default=NOISE,
                   help="own models: noise added to each weight tensor, as a fraction of that tensor's std")
    p.add_argument("--json", metavar="PATH", help="also write the numbers to this file")
    p.add_argument("--app-args", default="", help="extra app.py flags, e.g. \"--torch-threads 2 --analysis-workers 4\"")
    return p


def parse_args(argv=None) -> argparse.Namespace:
    return parser().parse_args(argv)


def payload_bytes(result) -> int:
    """The answer as compact UTF-8 JSON, in bytes: about what the server's result message carries for it
    (the data of Gradio's process_completed event; its envelope and the HTTP framing are not counted)."""
    return len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


class Tally:
    """Latencies, answer sizes, errors, cross-talk and training progress of many sessions, from their threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = {}
        self.payload: dict[str, list[int]] = {}  # endpoint -> bytes of each answer (payload_bytes)
        self.errors: list[str] = []
        self.crosstalk: list[str] = []
        self.shipped: list[str] = []  # own-model mode: answers equal to the unmodified shipped model's
        self.progress: dict[str, list[tuple[float, int]]] = {}  # trainer -> (monotonic time, step) while running
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
        size = payload_bytes(result)
        with self.lock:
            self.latencies.setdefault(endpoint, []).append(took)
            self.payload.setdefault(endpoint, []).append(size)
            self.timeline.append((endpoint, time.time() - took, took))
        return result

    def flag(self, who: str, what: str, kind: str = "crosstalk") -> None:
        with self.lock:
            getattr(self, kind).append(f"{who}: {what}")

    def step(self, who: str, step: int) -> None:
        with self.lock:
            self.progress.setdefault(who, []).append((time.monotonic(), step))


class Classroom:
    """One class run: settings, the endpoints' default arguments, reference fingerprints, answers, the tally."""

    def __init__(self, url: str, args: argparse.Namespace, defaults: dict, references: dict, answers: Answers):
        self.url, self.args, self.defaults, self.references, self.answers = url, args, defaults, references, answers
        self.tally = Tally()
        self.end = 0.0

    def connect(self) -> Client:
        # gradio_client's plain HTTP requests (an upload among them) give up after httpx's default 5 s, which a
        # browser never does: a slow upload is measured as slow, and an error only after --call-timeout
        return Client(self.url, verbose=False, httpx_kwargs={"timeout": self.args.call_timeout})

    def arguments(self, endpoint: str, model: str) -> list:
        return call_arguments(self.defaults, endpoint, model)

    def take_model(self, client: Client, who: str, model: str, upload: Path | None) -> bool:
        """Switch the session to its model: upload its own checkpoint, or pick a shipped model other than the
        default. False when that failed: the session would inspect another model than it should."""
        if upload is not None:
            endpoint, args, expected = "load_model", [handle_file(str(upload))], f"**uploaded {upload.name}**"
        elif model != MODELS[0]:
            endpoint, args, expected = "use_shipped_model", [model], f"**{model}**"
        else:
            return True
        summary_text = self.tally.call(client, who, endpoint, args, self.args.call_timeout)
        if summary_text is not None and expected not in summary_text:
            self.tally.flag(who, f"/{endpoint} answered {summary_text[:80]!r}")
        return summary_text is not None

    def analyst(self, index: int, model: str, upload: Path | None, rng: random.Random) -> None:
        who = f"analyst {index} ({upload.name if upload else model})"
        client = self.connect()
        try:
            if not self.take_model(client, who, model, upload):
                return
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
        """Flag an answer from another shipped model (fingerprint), another session or the shared cache (digest)."""
        if result is None:
            return
        got, want = fingerprint(endpoint, result), self.references[model][endpoint]
        if got != want:
            self.tally.flag(who, f"/{endpoint} looks like another model: {str(got)[:100]} != {str(want)[:100]}")
        for kind, what in self.answers.problems(who, endpoint, answer_digest(result)):
            self.tally.flag(who, what, kind)

    def trainer(self, index: int) -> None:
        """Start the Train tab's default run (steps lowered by 100 per trainer, so each status names its own
        run), poll /train_status every second until the class ends, then stop the run."""
        who = f"trainer {index}"
        client = self.connect()
        values = [p["parameter_default"] for p in self.defaults["train_start"]]
        steps_at = next(i for i, p in enumerate(self.defaults["train_start"]) if p["label"] == "Steps")
        values[steps_at] = max(100, int(values[steps_at]) - 100 * index)
        try:
            if self.tally.call(client, who, "train_start", values, self.args.call_timeout) is None:
                return
            for _ in range(int(self.args.seconds) + 10):
                if time.monotonic() >= self.end:
                    break
                tick = time.monotonic()
                status = self.tally.call(client, who, "train_status", [], self.args.call_timeout)
                if status is not None:
                    self.record_progress(who, status[1], values[steps_at])
                time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
            self.tally.call(client, who, "train_stop", [], self.args.call_timeout)
            wait_until_stopped(client, self.args.call_timeout)
        finally:
            client.close()

    def record_progress(self, who: str, status: str, total: int) -> None:
        """The run's step while it runs; cross-talk when the status names another run (another step total)."""
        progress = run_progress(status)
        if progress is None:
            return
        state, step, run_total = progress
        if run_total != total:
            self.tally.flag(who, f"/train_status shows another run: {status[:80]!r}")
        elif state == "running":
            self.tally.step(who, step)


def wait_until_stopped(client: Client, timeout: float) -> None:
    """Poll the session's run until it reports stopped or finished (at most timeout seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.predict(api_name="/train_status")[1]
        if any(word in status for word in ("stopped", "finished", "error")):
            return
        time.sleep(0.5)


def run_class(room: Classroom, uploads: list[Path]) -> Tally:
    """Every session in its own thread, started evenly over --ramp seconds; returns when all have ended.
    uploads: one checkpoint per analyser (own-model mode), or [] when the analysers share the shipped models."""
    a = room.args
    rng = random.Random(a.seed)
    threads = []
    room.end = time.monotonic() + a.seconds
    for i in range(a.sessions):
        if i < a.trainers:
            target, extra = room.trainer, ()
        else:
            model = MODELS[0] if uploads else MODELS[(i - a.trainers) % 2]
            upload = uploads[i - a.trainers] if uploads else None
            target, extra = room.analyst, (model, upload, random.Random(rng.random()))
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


def run_alone(solo: Classroom, upload: Path | None) -> Tally:
    """One session on its own model (upload; the default model if None) running the four calls --alone-rounds
    times, half a second apart, before the class."""
    client = solo.connect()
    try:
        if solo.take_model(client, "alone", MODELS[0], upload):
            for k in range(solo.args.alone_rounds * len(ANALYSIS)):
                endpoint = ANALYSIS[k % len(ANALYSIS)]
                result = solo.tally.call(client, "alone", endpoint, solo.arguments(endpoint, MODELS[0]),
                                         solo.args.call_timeout)
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


def tree_memory(root: int) -> dict:
    """RSS and PSS summed over the server and its descendants (training children, forkserver) now, how many
    processes they are, and the RSS of the server process alone (where the sessions' models live)."""
    pids = [root, *descendants(root)]
    return {"rss_bytes": sum(map(rss_bytes, pids)), "pss_bytes": sum(map(pss_bytes, pids)), "processes": len(pids),
            "server_rss_bytes": rss_bytes(root)}


def own_models(args: argparse.Namespace, folder: Path) -> list[Path]:
    """One checkpoint per analyser and one for the session alone (first), made before the app starts."""
    from bench.classroom_models import own_model_zips  # torch: only this mode needs it

    count = args.sessions - args.trainers + 1
    print(f"making {count} models of their own (the shipped {MODELS[0]} model, noise {args.noise:g}) ...", flush=True)
    return own_model_zips(MODELS[0], count, folder, seed=args.seed, noise=args.noise)


def class_numbers(args: argparse.Namespace, uploads: list[Path], beside=None) -> dict:
    """Launch the app, run one session alone and then the class; every number the report shows.
    beside(url): a context manager held open around the class (bench.teacher's teacher polls in it)."""
    server_flags = ["--max-trainers", str(max(2, args.trainers)), "--max-sessions", str(max(64, args.sessions + 8)),
                    *args.app_args.split()]
    memory_at = {}
    with LaunchedApp(server_flags) as app, MemorySampler(app.proc.pid) as memory:
        try:
            print(f"app on {app.url} (pid {app.proc.pid}), log {app.log}", flush=True)
            defaults = endpoint_defaults(app.url)
            references, digests = reference_fingerprints(app.url, lambda e, m: call_arguments(defaults, e, m))
            answers = Answers(None if args.shared_model else digests[MODELS[0]])
            memory_at["idle"] = tree_memory(app.proc.pid)
            print("one session alone ...", flush=True)
            solo_args = argparse.Namespace(**{**vars(args), "think": 0.5})
            alone_tally = run_alone(Classroom(app.url, solo_args, defaults, references, answers),
                                    uploads[0] if uploads else None)
            memory_at["before the class"] = tree_memory(app.proc.pid)
            print(f"class: {args.sessions} sessions ({args.trainers} training) for {args.seconds:g} s ...", flush=True)
            with beside(app.url) if beside else contextlib.nullcontext():
                class_tally = run_class(Classroom(app.url, args, defaults, references, answers), uploads[1:])
            memory_at["after the class"] = tree_memory(app.proc.pid)
        finally:
            app.remember(memory.seen)
    return summary(args, class_tally, alone_tally, memory, memory_at, len(app.outlived))


def run(args: argparse.Namespace, beside=None) -> dict:
    """Make the models, measure, print the report; the numbers. beside: as class_numbers's."""
    if not 0 <= args.trainers <= args.sessions:
        raise SystemExit("--trainers must be between 0 and --sessions")
    with tempfile.TemporaryDirectory(prefix="classroom-models-") as folder:
        numbers = class_numbers(args, [] if args.shared_model else own_models(args, Path(folder)), beside)
    print_report(numbers)
    return numbers


def measure(argv=None) -> list[Row]:
    """Run the class; with --json, also write every number (the timeline of every call among them)."""
    args = parse_args(argv)
    numbers = run(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(numbers, f, indent=1)
    return target_rows(numbers)


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
