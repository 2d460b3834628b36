"""What each analysis tab costs on the pretrained SmolLM2-135M: python -m bench.pretrained_views.

Each view runs on a 64-token prompt in a session whose activation cache is emptied before every call (so the
time includes the forward pass), then is serialised as Gradio sends it. The report card and the importance map
are computed once (they are cached per model afterwards). Also printed: the analysis cache one session keeps
after the Attention view (what 30 sessions hold at once). Targets (issue #20): Attention ≤ 1.5 s, report card
≤ 15 s, importance map ≤ 30 s."""
import argparse
import os
import statistics
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import torch  # noqa: E402

from bench.results import Row, Skipped, at_most, info, run_main  # noqa: E402
from bench.timing import print_table  # noqa: E402
from bench.views import PROMPT, serialised  # noqa: E402

MODEL = "smollm2-135m"
TOKENS = 64
TARGETS = {"attention": 1.5, "heads report": 15.0, "importance map": 30.0}


def prompt_of(tokenizer, n_tokens: int = TOKENS) -> str:
    """A text of exactly n_tokens tokens (the Shakespeare prompt repeated, cut at a token boundary)."""
    ids = tokenizer.encode(PROMPT * 4)[:n_tokens]
    return tokenizer.decode(ids)


def views() -> dict:
    """name -> (callback, arguments after (session, prompt)); light views, timed on every call."""
    from explorer.callbacks.attention import attention_view
    from explorer.callbacks.blocks import blocks_view
    from explorer.callbacks.embeddings import embeddings_view
    from explorer.callbacks.ffn import ffn_view
    from explorer.callbacks.residual import residual_view
    from explorer.callbacks.sampling import distribution_view

    return {
        "attention": (attention_view, (12, 3, -1)),
        "residual": (residual_view, (12, "norm")),
        "embeddings": (embeddings_view, ("2", 12)),
        "ffn": (ffn_view, (12, 0)),
        "blocks": (blocks_view, (12,)),
        "next_token": (distribution_view, (0.8, 0, 0.9, 0.0)),
    }


def timed(fn, *args) -> tuple[float, int]:
    start = time.perf_counter()
    size = len(serialised(fn(*args)).encode())
    return time.perf_counter() - start, size


def row(name: str, seconds: float, size: int) -> tuple[list, list[Row]]:
    """(the table row, the result rows) of one view."""
    target = TARGETS.get(name)
    verdict = "" if target is None else ("PASS" if seconds <= target else "miss")
    label = f"{MODEL}, {TOKENS}-token prompt: {name}"
    return ([name, f"{seconds:.2f}", f"≤ {target:g}" if target else "", verdict, f"{size / 1024:.1f}"],
            [info(label, seconds, "s") if target is None else at_most(label, seconds, "s", target),
             info(f"{label}: answer size", size / 1024, "KiB")])


def require_model(name: str = MODEL) -> None:
    """Skipped unless the pretrained model's package is installed."""
    from explorer.common.shipped_list import PRETRAINED, pretrained_path

    if pretrained_path(name) is None:
        raise Skipped(f"{name} is not installed: `{PRETRAINED[name].install_command}` installs it")


def measure(argv=None) -> list[Row]:
    p = argparse.ArgumentParser(prog="python -m bench.pretrained_views", description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="calls per light view (the median is reported)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (the server's --torch-threads)")
    args = p.parse_args(argv)
    require_model()
    torch.set_num_threads(args.threads)
    from explorer.callbacks.experiments import importance_view
    from explorer.callbacks.heads import heads_report_view
    from explorer.state.inspected import Inspected
    from explorer.state.session import Session

    session = Session(Inspected(None, "none"))
    start = time.perf_counter()
    session.inspected.use_shipped(MODEL)
    print(f"{MODEL} loaded in {time.perf_counter() - start:.1f} s")
    prompt = prompt_of(session.inspected.tokenizer)
    measured = []
    for name, (fn, view_args) in views().items():
        fn(session, prompt, *view_args)  # warm the code path
        runs = []
        for _ in range(args.repeats):
            session.inspected.caches.analysis.clear()
            runs.append(timed(fn, session, prompt, *view_args))
        measured.append(row(name, statistics.median(t for t, _ in runs), runs[-1][1]))
    session.inspected.caches.analysis.clear()
    views()["attention"][0](session, prompt, 12, 3, -1)
    kept = sum(t.nbytes for a in session.inspected.caches.analysis.values() for t in a.cache.store.values())
    kept += sum(a.logits.nbytes for a in session.inspected.caches.analysis.values())
    measured.append(row("heads report", *timed(heads_report_view, session)))
    measured.append(row("importance map", *timed(importance_view, session, "mean")))
    print_table(f"{MODEL}, {TOKENS}-token prompt, {args.threads} torch thread(s), load {os.getloadavg()[0]:.2f}",
                ["view", "seconds", "target s", "", "payload KiB"], [table for table, _ in measured])
    print(f"analysis cache one session keeps after the Attention view: {kept / 1e6:.2f} MB")
    return [r for _, rows in measured for r in rows] + [
        info("analysis cache one session keeps after the Attention view", kept / 1e6, "MB")]


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
