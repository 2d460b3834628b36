"""When the induction-phase preset's phase change happens: python -m bench.induction_phase [--seeds 0 1 2]

Trains the preset as `python -m model_core.train --preset induction-phase` does (same model, task, settings and
seed) and prints, per run, the step and time at which each criterion of issue #33 is met:
  induction  the strongest head's induction score first reaches 0.3
  icl drop   the in-context-learning score falls by 1 nat or more within 10 % of the steps around that step
  plateau    the validation loss before the change: how little it fell from the untrained model's
Target (2 cores): both criteria within the same 10 % of the steps, the whole run in 3 minutes or less.
Seconds are wall time (evaluations included); "cpu/threads" is the process's CPU time over its threads, what the
wall time would be on idle cores when other work shares the machine."""
import argparse
import os
import time

import torch

from bench.machine import cpu_description
from bench.results import Row, at_least, at_most, check, run_main
from bench.timing import print_table
from explorer.teaching.captions_progress import INDUCTION_THRESHOLD, first_step
from model_core.train import task_preset_trainer

PRESET = "induction-phase"
INDUCTION_CROSSING = INDUCTION_THRESHOLD  # the threshold, the one the Train tab's caption tells
ICL_DROP = 1.0  # nats
WINDOW = 0.1  # share of the run's steps
SECONDS_TARGET = 180.0


def largest_icl_drop(evals: list[dict], around: int, width: float) -> tuple[float, dict, dict]:
    """(drop, from evaluation, to evaluation): the largest fall of the ICL score between two evaluations at most
    `width` steps apart whose span contains step `around`."""
    best = (float("-inf"), None, None)
    for a in evals:
        for b in evals:
            if a["step"] <= around <= b["step"] and b["step"] - a["step"] <= width and "icl" in a and "icl" in b:
                best = max(best, (a["icl"] - b["icl"], a, b), key=lambda t: t[0])
    return best


def run(seed, threads: int) -> tuple[list[list], list[Row]]:
    """(the table's row, the result rows) of one training run of the preset."""
    trainer = task_preset_trainer(PRESET, seed)
    clock = {}
    started, cpu = time.perf_counter(), time.process_time()

    def note(metrics):
        if "eval" in metrics:
            clock[metrics["step"]] = time.perf_counter() - started

    trainer.run(callback=note)
    wall, cpu = time.perf_counter() - started, (time.process_time() - cpu) / threads
    evals, steps = trainer.evals, trainer.cfg.max_steps
    name = f"seed {trainer.cfg.seed}"
    crossing = first_step([e["step"] for e in evals], [e.get("induction") for e in evals], INDUCTION_CROSSING)
    done = [name, f"{1000 * trainer.elapsed / trainer.step_count:.1f}", f"{wall:.0f}", f"{cpu:.0f}"]
    rows = [at_most(f"{name}: the whole run, the larger of wall and CPU / threads", max(wall, cpu), "s",
                    SECONDS_TARGET)]
    if crossing is None:
        final = evals[-1]["induction"]
        return ([done + ["never", "", "", f"final induction {final:.2f}", "miss"]],
                rows + [check(f"{name}: induction score reaches {INDUCTION_CROSSING}", f"never (final {final:.2f})",
                              "reached", False)])
    drop, a, b = largest_icl_drop(evals, crossing, WINDOW * steps)
    rows += [check(f"{name}: induction score reaches {INDUCTION_CROSSING}", f"at step {crossing}", "reached",
                   True),
             at_least(f"{name}: ICL score drop within {WINDOW:.0%} of the steps around that step", drop, "nats",
                      ICL_DROP)]
    plateau = (f"val {evals[0]['val_loss']:.2f} -> {a['val_loss']:.2f} over steps 0-{a['step']}; "
               f"{evals[-1]['val_loss']:.2f} at {evals[-1]['step']}")
    met = drop >= ICL_DROP and max(wall, cpu) <= SECONDS_TARGET
    return [done + [f"{crossing} ({clock[crossing]:.0f} s)",
                    f"{drop:.2f} nats, steps {a['step']}-{b['step']} ({clock[b['step']]:.0f} s)", plateau,
                    "PASS" if met else "miss"]], rows


def measure(argv=None) -> list[Row]:
    p = argparse.ArgumentParser(prog="python -m bench.induction_phase", description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2, help="torch threads (the machine has 2 cores)")
    p.add_argument("--seeds", type=int, nargs="*", help="training seeds (default: the preset's own)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    table, rows = [], []
    for seed in args.seeds or [None]:
        more_table, more_rows = run(seed, args.threads)
        table, rows = table + more_table, rows + more_rows
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print_table(f"{PRESET}: {cpu_description()}, {args.threads} threads, load average {load}",
                ["run", "ms/step", "wall s", "cpu/threads s", f"induction >= {INDUCTION_CROSSING}",
                 f"ICL drop within {WINDOW:.0%} of the steps", "plateau", f"target (<= {SECONDS_TARGET:.0f} s)"],
                table)
    return rows


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
