"""python -m bench.generation: generation with and without the KV cache, shipped Shakespeare model, one torch
thread as in the server (--torch-threads 1). Targets (issue #19): one 150-token generation <= 0.1 s; the
Sampling tab's Compare (4 settings x 150 tokens) <= 0.35 s.

Both paths draw the same tokens (checked here too): both read the window of model_core.model.kv_cache's
half-window rule. Past block_size the window jumps back to the newest block_size // 2 tokens whenever it
would exceed block_size, so one step in 33 (block 64) re-encodes 32 tokens and the others feed one token;
the uncached path runs forward() on the whole window (32 to 64 tokens) every step. The app's default prompt
takes 60 of the 64 positions: 146 of its 150 steps are past the block. The per-step table shows what each
kind of step costs. python -m bench.studies.generation_ab times the same calls against a git revision, side by
side."""
import argparse
import os
import statistics

import torch

from bench.results import Row, at_most, check, info, run_main
from bench.timing import print_table, timed
from explorer.callbacks.sampling import comparison_view
from explorer.common.controls import DEFAULT_COMPARISON
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from explorer.state.shipped import load_shipped
from model_core.model.kv_cache import KVCache
from model_core.model.sampling import SamplingSettings, compare, generate
from model_core.training import sampling_workers

APP_PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak."  # explorer.common.controls.DEFAULT_PROMPT
SHORT_PROMPT = "ROMEO:"
GENERATE_TARGET, COMPARE_TARGET = 0.1, 0.35  # seconds, for TARGET_TOKENS new tokens
TARGET_TOKENS = 150
WORKERS = 2  # the app's --generation-workers default


def generation_contenders(model, ids: list[int], n: int, settings: list[SamplingSettings]) -> dict:
    """{name: a call} for one generation and one Compare, each with and without the cache."""
    return {
        "generate, cached": lambda: list(generate(model, ids, n, 1.0, seed=0)),
        "generate, uncached": lambda: list(generate(model, ids, n, 1.0, seed=0, use_cache=False)),
        "compare, cached": lambda: compare(model, ids, settings, n, seed=0),
        "compare, uncached": lambda: compare(model, ids, settings, n, seed=0, use_cache=False),
    }


def step_contenders(model, rows: int) -> dict:
    """{name: one step} for each kind of step past block_size: one new token after block_size - 1 cached ones
    (the dearest single-token step), the jump (the newest half block re-encoded into the emptied cache) and
    forward() on a full block (the dearest uncached step)."""
    block, half = model.cfg.block_size, model.cfg.block_size // 2
    window = torch.randint(model.cfg.vocab_size, (rows, block))
    cache = KVCache.for_model(model, rows)
    model.extend(window[:, :-1], cache)

    def incremental():
        for layer in cache.layers:
            layer.length = block - 1  # forget the token the previous call added
        model.extend(window[:, -1:], cache, last_only=True)

    def jump():
        cache.clear()
        model.extend(window[:, -half:], cache, last_only=True)

    return {f"step B={rows}, 1 new token after {block - 1}": incremental,
            f"step B={rows}, jump: re-encode {half}": jump,
            f"step B={rows}, forward() of {block}": lambda: model(window)}


def in_workers(call):
    """call() with Compare sent to the generation worker processes, as the app does (--generation-workers 2)."""
    def with_workers():
        sampling_workers.WORKERS = WORKERS
        try:
            return call()
        finally:
            sampling_workers.WORKERS = 0
    return with_workers


def same_tokens(model, ids: list[int], n: int, settings: list[SamplingSettings]) -> bool:
    cached = [r.tokens for r in compare(model, ids, settings, n, seed=0)]
    return cached == [r.tokens for r in compare(model, ids, settings, n, seed=0, use_cache=False)] and all(
        t == [st.token for st in generate(model, ids, n, s.temperature, s.top_k, s.top_p, s.min_p, seed=0)]
        for s, t in zip(settings, cached))


def medians(contenders: dict, rounds: int, repeats: int = 1) -> dict[str, tuple[float, float]]:
    """{name: (median wall s, median CPU s) per call}, the contenders interleaved, the order reversed every
    other round. On a busy machine the CPU time is closer to what an idle core would take."""
    for fn in contenders.values():
        fn()  # warm-up
    samples = {name: [] for name in contenders}
    for r in range(rounds):
        for name in (list(contenders) if r % 2 == 0 else list(reversed(contenders))):
            wall, cpu = timed(lambda: [contenders[name]() for _ in range(repeats)])
            samples[name].append((wall / repeats, cpu / repeats))
    return {name: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s))
            for name, s in samples.items()}


def generation_rows(session, prompt: str, n: int, settings: list[SamplingSettings],
                    rounds: int) -> tuple[list[list], list[Row]]:
    """(the table's rows, the result rows): the targets judge the app's paths (cached, and the callback) at
    TARGET_TOKENS tokens; the uncached path is the yardstick."""
    model, ids = session.inspected.model, session.inspected.tokenizer.encode(prompt)
    contenders = generation_contenders(model, ids, n, settings)
    contenders["/compare callback, cached"] = lambda: comparison_view(session, prompt, DEFAULT_COMPARISON, n, 0)
    contenders[f"/compare callback, {WORKERS} generation workers (wall)"] = in_workers(
        lambda: comparison_view(session, prompt, DEFAULT_COMPARISON, n, 0))
    table, rows = [], []
    for name, (wall, cpu) in medians(contenders, rounds).items():
        target = GENERATE_TARGET if name.startswith("generate") else COMPARE_TARGET
        spent = wall if name.endswith("(wall)") else cpu  # CPU: less load-bound; a worker's is not ours to count
        judge = n == TARGET_TOKENS and "uncached" not in name
        table.append([f"{len(ids)}-token prompt", name, f"{wall:.3f}", f"{cpu:.3f}",
                      "" if not judge else "ok" if spent <= target else "ABOVE TARGET"])
        label = f"{len(ids)}-token prompt, {n} tokens: {name}" + ("" if name.endswith("(wall)") else " (CPU)")
        rows.append(at_most(label, spent, "s", target) if judge else info(label, spent, "s"))
    same = same_tokens(model, ids, n, settings)
    table.append([f"{len(ids)}-token prompt", "cached tokens == uncached tokens", str(same), "", ""])
    rows.append(check(f"{len(ids)}-token prompt: cached tokens == uncached tokens", "yes" if same else "no",
                      "equal", same))
    return table, rows


def measure(argv=None) -> list[Row]:
    parser = argparse.ArgumentParser(prog="python -m bench.generation", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the server's --torch-threads default)")
    parser.add_argument("--tokens", type=int, default=TARGET_TOKENS,
                        help="new tokens per generation (the tab's default; the targets are for 150)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians are reported")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    session = Session(Inspected(load_shipped("shakespeare"), "shakespeare"))
    model, cfg, n = session.inspected.model.eval(), session.inspected.model.cfg, args.tokens
    settings = [SamplingSettings(t, k or None, p, m) for t, k, p, m in DEFAULT_COMPARISON]
    load = os.getloadavg()
    sampling_workers.WORKERS = WORKERS
    started = sampling_workers.start()
    sampling_workers.WORKERS = 0
    try:
        table, rows = generation_rows(session, APP_PROMPT, n, settings, args.rounds)
        more_table, more_rows = generation_rows(session, SHORT_PROMPT, n, settings, args.rounds)
    finally:
        sampling_workers.shutdown(final=True)
    if not started:
        print("the generation workers did not start: the worker rows ran in this process")
    with torch.inference_mode():
        steps = medians({**step_contenders(model, 1), **step_contenders(model, len(settings))}, args.rounds, 20)
    print(f"model: shakespeare ({cfg.n_layers}L x {cfg.n_heads}H, d_model {cfg.d_model}, block {cfg.block_size}); "
          f"{args.threads} torch thread(s); load average before {load[0]:.1f} / {load[1]:.1f} on {os.cpu_count()} CPUs")
    print_table(f"{n} new tokens, medians of {args.rounds} interleaved rounds (targets: generate <= "
                f"{GENERATE_TARGET} s, compare of {len(settings)} settings <= {COMPARE_TARGET} s)",
                ["prompt", "call", "wall s", "CPU s", "verdict"], table + more_table)
    print_table("One forward step, medians", ["step", "wall ms", "CPU ms"],
                [[name, f"{1000 * w:.2f}", f"{1000 * c:.2f}"] for name, (w, c) in steps.items()])
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    return rows + more_rows + [info(f"one forward step: {name}", 1000 * c, "CPU ms") for name, (_, c) in steps.items()]


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
