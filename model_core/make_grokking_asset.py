"""Train the "grokking" model shipped in explorer/assets/models/grokking/:  python -m model_core.make_grokking_asset

The grokking preset (a + b mod 59 on half of the pairs, Nanda et al.'s one-layer design and initialisation,
weight decay 2.0, full batch) trained as `python -m model_core.train --preset grokking` trains it, to the end of its
3,000 steps, long after the test accuracy reached 99 % (step 1,000 on one thread), so the grokking lab shows the
three phases at once. Fixed seeds, one torch thread: float sums, and with them the trajectory, depend on the thread
count and the CPU, so another machine's run differs in its last digits and its steps."""
import sys

from model_core.make_assets import one_asset_main
from model_core.train import task_preset_trainer
from model_core.training.trainer import Trainer

NAME = "grokking"
THREADS = 1  # as the shipped model was trained (docs/circuits.md)


def train(steps=None, log=print) -> Trainer:
    trainer = task_preset_trainer(NAME, snapshot_interval=0, max_steps=steps)

    def report(metrics):
        if "eval" in metrics and metrics["step"] % 500 == 0:
            e = metrics["eval"]
            log(f"{NAME} step {e['step']}: train acc {e['train_acc']:.3f} test acc {e['val_acc']:.3f} "
                f"({trainer.elapsed:.0f} s)")

    trainer.run(callback=report)
    return trainer


def accuracies(trainer: Trainer) -> dict:
    return {"train_acc": trainer.evals[-1]["train_acc"], "test_acc": trainer.evals[-1]["val_acc"]}


def main(argv=None) -> int:
    return one_asset_main(argv, "python -m model_core.make_grokking_asset", __doc__, NAME, "task: modular addition",
                          train, accuracies, threads=THREADS)


if __name__ == "__main__":
    sys.exit(main())
