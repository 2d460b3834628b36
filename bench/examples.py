"""python -m bench.examples: time the "examples from the whole text" pass (top-k contexts of every FFN neuron
and every head, and the neurons' firing rates) over the shipped Shakespeare model's whole validation split,
on 2 threads. Target: <= 5 s.

Also times the head report card (role scores on the probes), which the Heads tab computes first."""
import argparse
import os
import statistics

import torch

from bench.results import Row, at_most, info, run_main
from bench.timing import median_row, print_table, timed
from explorer.common.shipped_list import MODELS_DIR
from model_core.analysis.ablation import corpus_validation_ids
from model_core.analysis.probes import head_report
from model_core.analysis.top_examples import top_examples
from model_core.checkpoints.checkpoint import load_checkpoint

SHAKESPEARE = str(MODELS_DIR / "shakespeare")
TARGET_SECONDS = 5.0


def measure(argv=None) -> list[Row]:
    parser = argparse.ArgumentParser(prog="python -m bench.examples", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the target is for 2 cores)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    ckpt = load_checkpoint(SHAKESPEARE)
    cfg = ckpt.model.cfg
    load = os.getloadavg()
    encode = timed(lambda: corpus_validation_ids(ckpt.corpus, ckpt.tokenizer))
    ids = corpus_validation_ids(ckpt.corpus, ckpt.tokenizer)
    top_examples(ckpt.model, ids[: 4 * cfg.block_size])  # warm-up: first calls allocate
    passes = [timed(lambda: top_examples(ckpt.model, ids)) for _ in range(args.repeats)]
    reports = [timed(lambda: head_report(ckpt.model, ids)) for _ in range(args.repeats)]
    examples = (f"examples pass ({len(ids):,} tokens, {cfg.n_layers}x{cfg.d_mlp} neurons, "
                f"{cfg.n_layers}x{cfg.n_heads} heads)")
    rows = [median_row("encode the validation split (once per corpus)", [encode], args.threads),
            median_row(examples, passes, args.threads),
            median_row("head report card (probes + roles)", reports, args.threads)]
    print_table(f"Examples from the whole text, shipped Shakespeare model, {args.threads} threads, load average "
                f"before {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs",
                ["run", "wall median s", "wall min s", "CPU s", "CPU s / threads"], rows)
    print(f"\ntarget <= {TARGET_SECONDS:.0f} s for the examples pass; load average after: {os.getloadavg()[0]:.1f}")
    wall = lambda runs: statistics.median(w for w, _ in runs)  # noqa: E731
    return [info("encode the validation split (once per corpus), wall", encode[0], "s"),
            at_most(f"{examples}, wall median", wall(passes), "s", TARGET_SECONDS),
            info("head report card (probes + roles), wall median", wall(reports), "s")]


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
