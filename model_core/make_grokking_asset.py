"""Train the "grokking" model shipped in explorer/assets/models/grokking/:  python -m model_core.make_grokking_asset

The grokking preset (a + b mod 59 on half of the pairs, Nanda et al.'s one-layer design and initialisation,
weight decay 2.0, full batch) trained as `python -m model_core.train --preset grokking` trains it, to the end of its
3,000 steps, long after the test accuracy reached 99 % (step 1,000 on one thread), so the grokking lab shows the
three phases at once. Fixed seeds, one torch thread: float sums, and with them the trajectory, depend on the thread
count and the CPU, so another machine's run differs in its last digits and its steps."""
import argparse
import json
import sys
import time
from pathlib import Path

import torch

from model_core.checkpoints.checkpoint import Checkpoint, save_checkpoint
from model_core.data.tasks.registry import make_task
from model_core.make_assets import ASSETS_DIR, directory_bytes, thinned_history
from model_core.model.gpt import GPT
from model_core.train import full_batch
from model_core.training.presets import get_preset
from model_core.training.trainer import Trainer

NAME = "grokking"


def train(steps=None, log=print) -> Trainer:
    preset = get_preset("grokking")
    task = make_task(preset.data["task"])
    train_data, test_data = task.splits()
    cfg = preset.train_config(device="cpu", task=task.spec(), snapshot_interval=0, max_steps=steps,
                              batch_size=full_batch(task.spec(), train_data), eval_iters=1)
    torch.manual_seed(cfg.seed)
    model = GPT(preset.model_config(task.tokenizer().vocab_size))
    trainer = Trainer(model, train_data, test_data, cfg, task.tokenizer())

    def report(metrics):
        if "eval" in metrics and metrics["step"] % 500 == 0:
            e = metrics["eval"]
            log(f"{NAME} step {e['step']}: train acc {e['train_acc']:.3f} test acc {e['val_acc']:.3f} "
                f"({trainer.elapsed:.0f} s)")

    trainer.run(callback=report)
    return trainer


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m model_core.make_grokking_asset", description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, help="override the number of training steps (e.g. for a quick check)")
    p.add_argument("--out", default=str(ASSETS_DIR), help="directory to write the model folder into")
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # as the shipped model was trained (docs/circuits.md)
    started = time.perf_counter()
    trainer = train(args.steps, log=lambda s: print(s, file=sys.stderr, flush=True))
    ckpt = Checkpoint.from_trainer(trainer, "task: modular addition")
    ckpt.history = thinned_history(ckpt.history)
    path = save_checkpoint(ckpt, Path(args.out) / NAME)
    last = trainer.evals[-1]
    print(json.dumps({NAME: {"steps": trainer.step_count, "train_acc": last["train_acc"], "test_acc": last["val_acc"],
                             "seconds": round(time.perf_counter() - started, 1), "bytes": directory_bytes(path),
                             "out": str(path)}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
