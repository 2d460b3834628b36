"""python -m bench.ablation: server-side time of the importance map (every head, then every MLP layer,
knocked out alone) for the shipped Shakespeare model, on 2 threads. Target: <= 3 s.

Cold: first request of a session (validation text encoded and the means computed). Warm: later requests
(the app keeps the evaluation windows and means per inspected model)."""
import argparse
import os
import statistics

import torch

from bench.results import Row, at_most, run_main
from bench.timing import median_row, print_table, timed
from explorer.common.shipped_list import MODELS_DIR
from model_core.analysis.ablation import (
    EVAL_WINDOWS,
    component_means,
    corpus_validation_ids,
    eval_windows,
    importance_map,
)
from model_core.checkpoints.checkpoint import load_checkpoint

SHAKESPEARE = str(MODELS_DIR / "shakespeare")
TARGET_SECONDS = 3.0


def cold_seconds(ckpt) -> tuple[float, float]:
    def run():
        windows = eval_windows(corpus_validation_ids(ckpt.corpus, ckpt.tokenizer), ckpt.model.cfg.block_size)
        importance_map(ckpt.model, windows, "mean")
    return timed(run)


def warm_seconds(ckpt, mode: str, repeats: int) -> list[tuple[float, float]]:
    windows = eval_windows(corpus_validation_ids(ckpt.corpus, ckpt.tokenizer), ckpt.model.cfg.block_size)
    means = component_means(ckpt.model, windows)
    return [timed(lambda: importance_map(ckpt.model, windows, mode, means)) for _ in range(repeats)]


def measure(argv=None) -> list[Row]:
    parser = argparse.ArgumentParser(prog="python -m bench.ablation", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the target is for 2 cores)")
    parser.add_argument("--repeats", type=int, default=5, help="timed importance maps per mode")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    ckpt = load_checkpoint(SHAKESPEARE)
    cfg = ckpt.model.cfg
    load = os.getloadavg()
    samples = {"mean, cold (encode text + means)": [cold_seconds(ckpt)]}
    for mode in ("mean", "zero"):
        samples[f"{mode}, warm"] = warm_seconds(ckpt, mode, args.repeats)
    units = cfg.n_layers * cfg.n_heads + (0 if cfg.attn_only else cfg.n_layers)
    print_table(f"Importance map, shipped Shakespeare model ({cfg.n_layers} layers x {cfg.n_heads} heads + "
                f"{cfg.n_layers} MLP layers = {units} ablations, {EVAL_WINDOWS} windows x {cfg.block_size} tokens), "
                f"{args.threads} threads, load average before {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
                f"on {os.cpu_count()} CPUs", ["run", "wall median s", "wall min s", "CPU s", "CPU s / threads"],
                [median_row(name, runs, args.threads) for name, runs in samples.items()])
    print(f"\ntarget <= {TARGET_SECONDS:.0f} s server side; load average after: {os.getloadavg()[0]:.1f}")
    return [at_most(f"importance map, {name}, wall median", statistics.median(w for w, _ in runs), "s", TARGET_SECONDS)
            for name, runs in samples.items()]


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
