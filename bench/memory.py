"""python -m bench.memory: does the server's memory come back after a burst of sessions?

Launches the app (bench.server_process), warms it with a few sessions, then runs a burst of --sessions short
gradio_client sessions, --parallel at a time. Each builds a model of its own (/init_model with one of a few small
shapes), runs /attention on it, uploads a saved model (/load_model) and closes. Then it waits --settle seconds
for the server to release them (the burst's closed pages, --resume-ttl, --max-sessions) and reports the RSS of
the server process alone and of its whole process tree (server, forkserver): at the start, the peak during the
burst and after. Target: after - start <= 300 MB for the server, and no call fails."""
import argparse
import os
import random
import threading
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from gradio_client import Client, handle_file  # noqa: E402

from bench.results import Row, at_most, info, run_main  # noqa: E402
from bench.server_process import LaunchedApp, MemorySampler, pss_bytes  # noqa: E402

MB = 1e6
TARGET_MB = 300  # the server's RSS after the burst minus before it
SHAPES = [dict(n_layers=1, n_heads=2, d_model=32, block_size=32), dict(n_layers=2, n_heads=4, d_model=64, block_size=64),
          dict(n_layers=3, n_heads=4, d_model=128, block_size=128), dict(n_layers=4, n_heads=8, d_model=128, block_size=256)]
PROMPT = "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun. " * 2


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="RSS of the server before, during and after a burst of sessions.")
    p.add_argument("--sessions", type=int, default=300, help="sessions in the burst")
    p.add_argument("--parallel", type=int, default=8, help="sessions open at once")
    p.add_argument("--settle", type=float, default=30.0, help="seconds to wait after the burst before 'after'")
    p.add_argument("--resume-ttl", type=float, default=5.0, help="the app's --resume-ttl (a closed page's wait)")
    p.add_argument("--max-sessions", type=int, default=64, help="the app's --max-sessions")
    p.add_argument("--no-upload", action="store_true", help="skip /load_model in each session")
    p.add_argument("--seed", type=int, default=0, help="seeds each session's model shape")
    p.add_argument("--app-args", default="", help="extra app.py flags")
    return p.parse_args(argv)


class Burst:
    """The sessions of the burst, from --parallel threads; counts calls and failures."""

    def __init__(self, url: str, args, init_params: list[dict], upload: str | None):
        self.url, self.args, self.init_params, self.upload = url, args, init_params, upload
        self.lock, self.next, self.calls, self.errors = threading.Lock(), 0, 0, []

    def init_args(self, index: int) -> dict:
        shape = random.Random(self.args.seed * 100_003 + index).choice(SHAPES)
        return {p["parameter_name"]: shape.get(p["parameter_name"], p["parameter_default"]) for p in self.init_params}

    def session(self, index: int) -> None:
        client = Client(self.url, verbose=False)
        try:
            for name, call in (("init_model", lambda: client.predict(**self.init_args(index), api_name="/init_model")),
                               ("attention", lambda: client.predict(PROMPT, 0, 0, -1, True, api_name="/attention")),
                               ("load_model", lambda: self.upload and client.predict(handle_file(self.upload),
                                                                                     api_name="/load_model"))):
                try:
                    call()
                    with self.lock:
                        self.calls += 1
                except Exception as err:  # noqa: BLE001 - counted and reported
                    with self.lock:
                        self.errors.append(f"session {index} /{name}: {type(err).__name__}: {str(err)[:120]}")
        finally:
            client.close()

    def worker(self) -> None:
        while True:
            with self.lock:
                index, self.next = self.next, self.next + 1
            if index >= self.args.sessions:
                return
            self.session(index)

    def run(self) -> None:
        threads = [threading.Thread(target=self.worker, daemon=True) for _ in range(self.args.parallel)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def saved_model(url: str) -> str:
    """A model zip to upload: the default session's model, saved through /save_model."""
    client = Client(url, verbose=False)
    try:
        return client.predict(api_name="/save_model")
    finally:
        client.close()


def settled(sampler: MemorySampler, seconds: float) -> tuple[int, int]:
    """Wait `seconds`, then -> the server's and the tree's RSS (the least of the last 3 s of samples)."""
    time.sleep(seconds)
    sampler.sample()
    tail = [s for s in sampler.series if s[0] >= time.monotonic() - 3.0]
    return min(s[1] for s in tail), min(s[2] for s in tail)


def measure(argv=None) -> list[Row]:
    args = parse_args(argv)
    flags = ["--resume-ttl", str(args.resume_ttl), "--max-sessions", str(args.max_sessions), *args.app_args.split()]
    with LaunchedApp(flags) as app, MemorySampler(app.proc.pid, interval=0.25) as rss:
        print(f"app on {app.url} (pid {app.proc.pid}, {' '.join(flags)}), log {app.log}", flush=True)
        api = Client(app.url, verbose=False)
        init_params = api.view_api(return_format="dict", print_info=False)["named_endpoints"]["/init_model"]["parameters"]
        api.close()
        upload = None if args.no_upload else saved_model(app.url)
        warm = Burst(app.url, argparse.Namespace(**{**vars(args), "sessions": len(SHAPES)}), init_params, upload)
        warm.run()  # every code path and shape once, so 'start' has everything loaded that the burst will use
        start = settled(rss, args.settle / 2)
        print(f"start: server {start[0] / MB:.0f} MB, tree {start[1] / MB:.0f} MB; burst of {args.sessions} sessions, "
              f"{args.parallel} at a time ...", flush=True)
        rss.peak_server = rss.peak = 0
        began = time.monotonic()
        burst_run = Burst(app.url, args, init_params, upload)
        burst_run.run()
        took = time.monotonic() - began
        peak = rss.peak_server, rss.peak
        after = settled(rss, args.settle)
        pss = pss_bytes(app.proc.pid)
    print(f"burst: {burst_run.calls} calls in {took:.0f} s, {len(burst_run.errors)} errors")
    for line in burst_run.errors[:5]:
        print("   ", line)
    print(f"{'':8}{'start':>9}{'peak':>9}{'after':>9}{'after - start':>15}")
    for i, name in enumerate(("server", "tree")):
        print(f"{name:8}{start[i] / MB:7.0f}MB{peak[i] / MB:7.0f}MB{after[i] / MB:7.0f}MB"
              f"{(after[i] - start[i]) / MB:+13.0f}MB")
    print(f"server PSS after: {pss / MB:.0f} MB; target: server after - start <= {TARGET_MB} MB "
          f"({'met' if after[0] - start[0] <= TARGET_MB * MB else 'NOT met'})")
    burst = f"a burst of {args.sessions} sessions, {args.parallel} at a time"
    return [info(f"server RSS before {burst}", start[0] / MB, "MB"),
            info(f"server RSS, peak during {burst}", peak[0] / MB, "MB"),
            at_most(f"server RSS {args.settle:g} s after {burst} - before", (after[0] - start[0]) / MB, "MB",
                    TARGET_MB),
            info(f"server and its children (process tree) RSS after - before {burst}", (after[1] - start[1]) / MB,
                 "MB"),
            at_most(f"failed calls in {burst}", len(burst_run.errors), "", 0)]


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
