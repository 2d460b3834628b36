"""python -m bench.trainers: two equal training runs started the way the app starts them; steps/s of each.

By default the runs are started in this process through the Train tab's own callback (start_training on
Sessions, so TrainingRun, RemoteTrainer and the forkserver children are the app's), each --stagger seconds
after the one before, with this process's torch on 1 thread as in the server. --analysis N adds N sessions
running the Attention view in a loop on their own models (the server's interactive load). --app drives a
launched app through gradio_client instead (/train_start, /train_status, /attention).

Prints each run's steps/s over the same window (both runs training), their ratio (slower / faster, 1.0 is
fair), and what each child was told and runs at: torch threads, OS threads, nice of every thread. Target: the
ratio >= 0.75."""
import argparse
import os
import re
import statistics
import threading
import time
from pathlib import Path

from bench.results import Row, at_least, info, run_main

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

PROMPT = "ROMEO: But soft, what light through yonder window breaks?"
FAIR_SHARE = 0.75  # the slower run's steps/s at least this fraction of the faster's


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Two equal training runs side by side: steps/s of each and their ratio.")
    p.add_argument("--preset", default="classroom", help="the Train tab preset both runs use (tiny: many small steps)")
    p.add_argument("--runs", type=int, default=2, help="equal runs (1: a run alone, e.g. beside --analysis)")
    p.add_argument("--seconds", type=float, default=20.0, help="measuring window once every run trains")
    p.add_argument("--stagger", type=float, default=3.0, help="seconds between the first run's Start and the second's")
    p.add_argument("--analysis", type=int, default=0, help="sessions running the Attention view in a loop meanwhile")
    p.add_argument("--think", type=float, default=0.2, help="seconds between an analysis session's calls")
    p.add_argument("--pause", action="store_true", help="pause and resume the first run while the second starts")
    p.add_argument("--app", action="store_true", help="drive a launched app through gradio_client instead")
    return p.parse_args(argv)


# ---------------------------------------------------------------- what a child runs at (from /proc)

def child_facts(pid: int | None) -> str:
    """'threads N, nice a..b' of a live process: its OS thread count and the nice value of each thread
    (Linux keeps the nice value per thread)."""
    if pid is None:
        return "gone"
    nices = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        nices.append(int(stat[stat.rindex(")") + 2:].split()[16]))
    if not nices:
        return "gone"
    return f"{len(nices)} OS threads, nice {min(nices)}..{max(nices)}"


def app_children(server_pid: int) -> list[int]:
    """The launched app's training children: the processes its forkserver forked."""
    from bench.server_process import _stat_fields, descendants

    def parent(pid):
        fields = _stat_fields(pid)
        return int(fields[1]) if fields else 0

    below = descendants(server_pid)
    servers = [p for p in below if parent(p) == server_pid and b"forkserver" in _cmdline(p)]
    return [p for p in below if parent(p) in servers]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# ---------------------------------------------------------------- analysis load

def fresh_prompt(prompt: str, index: int, calls: int) -> str:
    """prompt with a tail of letters no other call has: a new forward pass, never a shared result."""
    return f"{prompt} " + "".join(chr(ord("a") + int(d)) for d in f"{index}{calls:06d}")


class Analysts:
    """N threads calling an Attention view in a loop, each on its own session; records latencies."""

    def __init__(self, n: int, think: float, call):
        self.n, self.think, self.call = n, think, call
        self.latencies: list[float] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._loop, args=(i,), daemon=True) for i in range(n)]

    def _loop(self, index: int) -> None:
        state = None
        while not self.stop.is_set():
            start = time.perf_counter()
            state = self.call(index, state)
            if self.stop.is_set():
                break
            self.latencies.append(time.perf_counter() - start)
            self.stop.wait(self.think)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def summary(self) -> str:
        if not self.latencies:
            return "no analysis load"
        q = sorted(self.latencies)
        return (f"{self.n} analysis sessions: {len(q)} Attention calls, p50 {statistics.median(q):.2f} s, "
                f"p95 {q[int(0.95 * (len(q) - 1))]:.2f} s")


# ---------------------------------------------------------------- in this process, through the app's classes

def in_process(args) -> dict:
    import torch

    from explorer.callbacks.attention import attention_page_view
    from explorer.callbacks.presets import preset_control_values
    from explorer.callbacks.train import start_training
    from explorer.common.controls import ARCH_FIELDS, OPTIM_FIELDS
    from explorer.common.limits import LIMITS
    from explorer.state.session import new_session
    from model_core.training.run_protocol import Command

    torch.set_num_threads(1)  # the server's --torch-threads default
    LIMITS.max_trainers = max(args.runs, LIMITS.max_trainers)
    values = preset_control_values(args.preset) | {"max_steps": LIMITS.max_steps}
    data = {"corpus": "shakespeare", "kind": "char", "bpe_vocab": 512}
    data |= {k: values[k] for k in data if k in values}
    start_values = [data["corpus"], data["kind"], data["bpe_vocab"], *(values[k] for k in (*ARCH_FIELDS, *OPTIM_FIELDS))]

    def analyse(index, state):
        session, calls = state or (new_session(), 0)
        with session.lock:  # a new prompt each call: a forward pass and every figure, as a student's click
            attention_page_view(session, fresh_prompt(PROMPT, index, calls), 0, 0, -1, True)
        return session, calls + 1

    sessions = [new_session() for _ in range(args.runs)]
    with Analysts(args.analysis, args.think, analyse) as analysts:
        try:
            for i, session in enumerate(sessions):
                if i:
                    time.sleep(args.stagger)
                if i == 1 and args.pause:
                    sessions[0].workspace.run.control(Command.PAUSE)
                start_training(session, *start_values)
            if args.pause:
                time.sleep(1.0)
                sessions[0].workspace.run.control(Command.RESUME)
            runs = [s.workspace.run for s in sessions]
            _wait(lambda: all(r.progress.step > 0 for r in runs), 120)
            time.sleep(1.0)  # past the second child's first steps
            before = [(time.perf_counter(), r.progress.step) for r in runs]
            facts = [f"{child_facts(r.remote.process.pid)}, told {r.progress.threads_told} torch threads, runs on "
                     f"{r.progress.threads_running}" for r in runs]
            time.sleep(args.seconds)
            after = [(time.perf_counter(), r.progress.step) for r in runs]
        finally:
            for s in sessions:
                s.workspace.stop_training()
            for s in sessions:
                if s.workspace.run is not None:
                    s.workspace.run.thread.join(timeout=30)
    rates = [(a[1] - b[1]) / (a[0] - b[0]) for a, b in zip(after, before)]
    return dict(rates=rates, facts=facts, analysis=analysts.summary())


def _wait(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the runs did not start training in time")
        time.sleep(0.05)


# ---------------------------------------------------------------- a launched app, through gradio_client

STEP = re.compile(r"step \*\*([\d,]+) /")


def through_app(args) -> dict:
    from gradio_client import Client

    from bench.classroom import endpoint_defaults
    from bench.server_process import LaunchedApp
    from explorer.callbacks.presets import preset_control_values

    values = preset_control_values(args.preset) | {"max_steps": 20_000}
    with LaunchedApp(["--max-trainers", str(max(2, args.runs))]) as app:
        print(f"app on {app.url} (pid {app.proc.pid}), log {app.log}", flush=True)
        defaults = endpoint_defaults(app.url)
        names = [p["parameter_name"] for p in defaults["train_start"]]
        start = {n: values.get(n, p["parameter_default"]) for n, p in zip(names, defaults["train_start"])}
        attention = [p["parameter_default"] for p in defaults["attention"]]

        clients = []

        def analyse(index, state):
            client, calls = state or (Client(app.url, verbose=False), 0)
            if not calls:
                clients.append(client)
            client.predict(fresh_prompt(attention[0], index, calls), *attention[1:4], True, api_name="/attention")
            return client, calls + 1

        def step_of(client) -> int:
            found = STEP.search(client.predict(api_name="/train_status")[1])
            return int(found.group(1).replace(",", "")) if found else 0

        trainers = [Client(app.url, verbose=False) for _ in range(args.runs)]
        clients += trainers
        with Analysts(args.analysis, args.think, analyse) as analysts:
            for i, client in enumerate(trainers):
                if i:
                    time.sleep(args.stagger)
                if i == 1 and args.pause:
                    trainers[0].predict(api_name="/train_pause")
                client.predict(**start, api_name="/train_start")
            if args.pause:
                time.sleep(1.0)
                trainers[0].predict(api_name="/train_resume")
            _wait(lambda: all(step_of(c) > 0 for c in trainers), 120)
            time.sleep(1.0)
            before = [(time.perf_counter(), step_of(c)) for c in trainers]
            children = app_children(app.proc.pid)
            facts = [child_facts(pid) for pid in children]
            time.sleep(args.seconds)
            after = [(time.perf_counter(), step_of(c)) for c in trainers]
            for c in trainers:
                c.predict(api_name="/train_stop")
        for c in clients:
            c.close()
    rates = [(a[1] - b[1]) / (a[0] - b[0]) for a, b in zip(after, before)]
    return dict(rates=rates, facts=facts, analysis=analysts.summary())


def measure(argv=None) -> list[Row]:
    args = parse_args(argv)
    how = "a launched app" if args.app else "this process (the app's classes)"
    print(f"{args.runs} '{args.preset}' runs through {how}, each started {args.stagger:g} s after the one before"
          f"{' (first paused meanwhile)' if args.pause else ''}, {args.analysis} analysis sessions, "
          f"{os.cpu_count()} cores ...", flush=True)
    numbers = through_app(args) if args.app else in_process(args)
    rates = numbers["rates"]
    for i, rate in enumerate(rates):
        print(f"trainer {i + 1}: {rate:7.1f} steps/s")
    for facts in numbers["facts"]:
        print(f"   a training child: {facts}")
    rows = [info(f"trainer {i + 1}, '{args.preset}' preset", rate, "steps/s") for i, rate in enumerate(rates)]
    if len(rates) > 1:
        print(f"ratio slowest/fastest: {min(rates) / max(rates):.2f}  (1.00 is an equal share; target >= {FAIR_SHARE})")
        rows.append(at_least(f"{len(rates)} runs started {args.stagger:g} s apart: slowest / fastest steps/s",
                             min(rates) / max(rates), "x", FAIR_SHARE))
    print(numbers["analysis"])
    return rows


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
