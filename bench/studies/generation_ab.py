"""python -m bench.studies.generation_ab: one 150-token generation and the Sampling tab's Compare (4 settings x
150 tokens) on the shipped Shakespeare model, this tree against a git revision (HEAD by default), side by side.

Each tree runs in a worker process of its own (one torch thread, as in the server); the parent asks them in
turn, one call at a time, the order reversed every other round, so a neighbour's load hits both alike. It
reports medians and the ratio after / before, and checks that both trees draw the same tokens for the same
seed. Targets (issue #19): generate <= 0.1 s, Compare <= 0.35 s."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

APP_PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak."  # explorer.common.controls.DEFAULT_PROMPT
TARGETS = {"generate": 0.1, "compare": 0.35, "/compare callback": 0.35}  # seconds for 150 new tokens
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout


def worker(tokens: int) -> None:
    """Serve 'name' lines on stdin with one timed call each ({"wall", "cpu"} on stdout); 'tokens' answers the
    tokens drawn. Imports whatever model_core / explorer PYTHONPATH names, so it runs either tree."""
    import torch

    from explorer.callbacks.sampling import comparison_view
    from explorer.common.controls import DEFAULT_COMPARISON
    from explorer.state.inspected import Inspected
    from explorer.state.session import Session
    from explorer.state.shipped import load_shipped
    from model_core.model.sampling import SamplingSettings, compare, generate

    torch.set_num_threads(1)
    session = Session(Inspected(load_shipped("shakespeare"), "shakespeare"))
    model, ids = session.inspected.model.eval(), session.inspected.tokenizer.encode(APP_PROMPT)
    settings = [SamplingSettings(t, k or None, p, m) for t, k, p, m in DEFAULT_COMPARISON]
    calls = {"generate": lambda: [st.token for st in generate(model, ids, tokens, 1.0, seed=0)],
             "compare": lambda: [c.tokens for c in compare(model, ids, settings, tokens, seed=0)],
             "/compare callback": lambda: comparison_view(session, APP_PROMPT, DEFAULT_COMPARISON, tokens, 0)}
    for name in calls:
        calls[name]()  # warm-up
    for line in sys.stdin:
        name = line.strip()
        if name == "tokens":
            answer = {"generate": calls["generate"](), "compare": calls["compare"]()}
        else:
            wall, cpu = time.perf_counter(), time.process_time()
            calls[name]()
            answer = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
        print(json.dumps(answer), flush=True)


def baseline_tree(revision: str, folder: str) -> str:
    """The code of a git revision (model_core, explorer, bench) unpacked into folder."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", revision, "model_core", "explorer", "bench"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    return folder


def start_worker(tree: str, tokens: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": tree}
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", "--tokens", str(tokens)],
                            cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def ask(proc: subprocess.Popen, name: str) -> dict:
    proc.stdin.write(name + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def side_by_side(workers: dict, rounds: int) -> dict:
    """{(call, tree): [(wall, cpu), ...]}: every call on every tree once per round, interleaved."""
    samples = {(name, tree): [] for name in TARGETS for tree in workers}
    for r in range(rounds):
        order = list(samples) if r % 2 == 0 else list(reversed(samples))
        for name, tree in order:
            answer = ask(workers[tree], name)
            samples[name, tree].append((answer["wall"], answer["cpu"]))
    return samples


def report(samples: dict, rounds: int, tokens: int) -> None:
    med = {key: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s)) for key, s in samples.items()}
    print(f"\n{tokens} new tokens, medians of {rounds} interleaved rounds, wall s (CPU s); 1 torch thread")
    print(f"{'call':<20}{'before':>16}{'after':>16}{'after/before':>14}  target")
    for name, target in TARGETS.items():
        (bw, bc), (aw, ac) = med[name, "before"], med[name, "after"]
        verdict = "" if tokens != 150 else "ok" if ac <= target else "ABOVE"  # CPU: less load-bound
        print(f"{name:<20}{bw:>8.3f} ({bc:.3f}){aw:>8.3f} ({ac:.3f}){ac / bc:>14.2f}  <= {target} s {verdict}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="HEAD", help="git revision to compare this tree with")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds; medians are reported")
    parser.add_argument("--tokens", type=int, default=150, help="new tokens per generation (targets: 150)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.tokens)
    with tempfile.TemporaryDirectory() as folder:
        trees = {"before": baseline_tree(args.baseline, folder), "after": ROOT}
        workers = {name: start_worker(tree, args.tokens) for name, tree in trees.items()}
        try:
            drawn = {name: ask(proc, "tokens") for name, proc in workers.items()}
            load = os.getloadavg()[0]
            samples = side_by_side(workers, args.rounds)
        finally:
            for proc in workers.values():
                proc.stdin.close()
                proc.wait()
    print(f"baseline: {args.baseline}; load average before {load:.1f}, after {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    print(f"same tokens for the same seed in both trees: {drawn['before'] == drawn['after']}")
    report(samples, args.rounds, args.tokens)


if __name__ == "__main__":
    main()
