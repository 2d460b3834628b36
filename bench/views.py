"""What one click on an analysis tab costs, next to the model's forward pass: python -m bench.views.

Each view runs on the shipped model's 64-token prompt in a session whose activation cache is emptied before
every call, so the callback's time includes its forward pass; it is then serialised the way Gradio does (every
figure's JSON, the rest as JSON). The forward pass is `run_with_cache` on the same tokens. One torch thread,
as in the server. Targets (issue #19): Attention ≤ 8× the forward pass, every other view ≤ 10×."""
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import torch  # noqa: E402

from bench.results import Row, at_most, info, run_main  # noqa: E402
from bench.timing import print_table  # noqa: E402

PROMPT = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\nFirst Citizen:"
          "\nYou are all resolved rather to die than to famish?")
TARGETS = {"attention": 8.0}  # every other view: 10x
DEFAULT_TARGET = 10.0


def views() -> dict:
    """name -> (callback, arguments after (session, prompt))."""
    from explorer.callbacks.attention import attention_view
    from explorer.callbacks.blocks import blocks_view
    from explorer.callbacks.embeddings import embeddings_view
    from explorer.callbacks.ffn import ffn_view
    from explorer.callbacks.residual import residual_view
    from explorer.callbacks.sampling import distribution_view

    return {
        "attention": (attention_view, (1, 2, -1)),
        "residual": (residual_view, (1, "norm")),
        "embeddings": (embeddings_view, ("2", 1)),
        "ffn": (ffn_view, (1, 0)),
        "blocks": (blocks_view, (1,)),
        "next_token": (distribution_view, (0.8, 0, 0.9, 0.0)),
    }


def serialised(result) -> str:
    """The answer as the browser receives it: each figure's own JSON, everything else as JSON."""
    parts = result if isinstance(result, tuple) else (result,)
    out = []
    for part in parts:
        if hasattr(part, "to_json"):
            out.append(part.to_json())
        else:
            out.append(json.dumps(part, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))
    return "[" + ",".join(out) + "]"


def measure_view(session, fn, args, repeats: int) -> tuple[float, int]:
    """Median seconds of callback + serialisation with an empty activation cache, and the payload bytes."""
    times, size = [], 0
    for _ in range(repeats):
        session.inspected.caches.analysis.clear()
        start = time.perf_counter()
        size = len(serialised(fn(session, PROMPT, *args)).encode())
        times.append(time.perf_counter() - start)
    return statistics.median(times), size


def forward_seconds(session, repeats: int) -> float:
    from explorer.callbacks.prompting import encode_prompt

    ids = torch.tensor([encode_prompt(session.inspected.tokenizer, PROMPT, session.inspected.config.block_size, False)])
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        session.inspected.model.run_with_cache(ids)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(argv=None) -> list[Row]:
    p = argparse.ArgumentParser(prog="python -m bench.views", description=__doc__.splitlines()[0])
    p.add_argument("--model", default="shakespeare", help="shipped model to inspect")
    p.add_argument("--repeats", type=int, default=15, help="calls per view (the median is reported)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    from explorer.state.session import new_session

    session = new_session(args.model)
    for fn, view_args in views().values():  # warm every code path once
        fn(session, PROMPT, *view_args)
    table, rows = [], []
    for name, (fn, view_args) in views().items():
        fwd = forward_seconds(session, args.repeats)  # measured beside each view: the machine's speed moves
        total, size = measure_view(session, fn, view_args, args.repeats)
        target = TARGETS.get(name, DEFAULT_TARGET)
        table.append([name, f"{fwd * 1e3:.1f}", f"{total * 1e3:.1f}", f"{total / fwd:.1f}x", f"≤ {target:g}x",
                      "PASS" if total / fwd <= target else "miss", f"{size / 1024:.1f}"])
        rows += [at_most(f"{name} view (callback + JSON) / its forward pass", total / fwd, "x", target),
                 info(f"{name} view: answer size", size / 1024, "KiB")]
    print_table(f"{args.model}, {len(PROMPT)}-character prompt, 1 torch thread, median of {args.repeats}",
                ["view", "forward ms", "callback+JSON ms", "ratio", "target", "", "payload KiB"], table)
    return rows


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
