"""Train the demo models shipped in explorer/assets/models/:  python -m model_core.make_assets [--only NAME]

Each is a checkpoint directory (config.json, model.safetensors, snapshots.json) trained for a fixed
number of steps from fixed seeds, so the losses come out the same on any CPU; only the time differs."""
import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Optional

import torch

from model_core.checkpoints.checkpoint import Checkpoint, save_checkpoint
from model_core.data.corpora import load_corpus
from model_core.data.dataset import token_tensor, train_val_split
from model_core.data.tokenization import build_tokenizer
from model_core.model.gpt import GPT
from model_core.training.presets import get_preset
from model_core.training.trainer import Trainer

ASSETS_DIR = Path(__file__).resolve().parent.parent / "explorer" / "assets" / "models"
MAX_HISTORY_POINTS = 500  # per-step metrics are thinned to about this many so config.json stays small


@dataclass(frozen=True)
class Asset:
    corpus: str  # built-in corpus name
    preset: str  # model shape and training settings to start from
    probe_text: str  # fixed prompt for the attention snapshots (cut to the block size)
    train: dict = field(default_factory=dict)  # TrainConfig overrides of the preset (max_steps included)


ASSETS = {
    "shakespeare": Asset(
        # gpt2-classic: the design the shipped model was trained with, so rebuilding it reproduces it.
        "shakespeare", "gpt2-classic", "First Citizen:\nBefore we proceed any further, hear me speak.",
        # 2800 x 32 x 64 tokens is ~5 passes over the text; 15 snapshots of the 60-token probe keep it < 5 MB.
        dict(max_steps=2800, batch_size=32, lr=8e-3, min_lr=2e-4, warmup_steps=100, eval_interval=200,
             eval_iters=20, snapshot_interval=200, seed=1337),
    ),
    "first-names": Asset(
        "first-names", "names", "emma\njohn\nsophia",
        dict(max_steps=2000, batch_size=64, lr=5e-3, min_lr=2e-4, warmup_steps=50, eval_interval=100,
             eval_iters=20, snapshot_interval=100, seed=1337),
    ),
}


def train_asset(name: str, steps: int = None, log=print) -> Trainer:
    """Train the asset called name (optionally for another number of steps); returns the trainer."""
    asset = ASSETS[name]
    preset = get_preset(asset.preset)
    text = load_corpus(asset.corpus)
    tokenizer = build_tokenizer("char", text)
    train_data, val_data = train_val_split(token_tensor(tokenizer.encode(text)))
    overrides = {**asset.train, "device": "cpu", "probe_text": asset.probe_text}
    if steps is not None:
        overrides["max_steps"] = steps
    cfg = preset.train_config(**overrides)
    torch.manual_seed(cfg.seed)  # model initialisation
    trainer = Trainer(GPT(preset.model_config(tokenizer.vocab_size)), train_data, val_data, cfg, tokenizer)

    def report(metrics):
        if "eval" in metrics:
            e = metrics["eval"]
            log(f"{name} step {e['step']}/{cfg.max_steps}: train {e['train_loss']:.4f} val {e['val_loss']:.4f} "
                f"({trainer.elapsed:.0f} s)")

    trainer.run(callback=report)
    return trainer


def thinned_history(history: list[dict], max_points: int = MAX_HISTORY_POINTS) -> list[dict]:
    """Every k-th step's metrics (and the last), floats rounded: a loss curve, not a log file."""
    every = max(1, math.ceil(len(history) / max_points))
    kept = [m for m in history if m["step"] % every == 0 or m is history[-1]]
    return [{k: _rounded(v) for k, v in m.items()} for m in kept]


def _rounded(value):
    if isinstance(value, float):
        return float(f"{value:.4g}") if abs(value) < 1 else round(value, 4)
    return value


def save_asset(trainer: Trainer, name: str, corpus: str, out_dir: Path) -> Path:
    """The trained model as out_dir/name, its per-step history thinned."""
    ckpt = Checkpoint.from_trainer(trainer, corpus)
    ckpt.history = thinned_history(ckpt.history)
    return save_checkpoint(ckpt, out_dir / name)


def directory_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def log_line(text: str) -> None:
    """Progress goes to stderr; stdout carries only the JSON lines."""
    print(text, file=sys.stderr, flush=True)


def asset_parser(prog: str, doc: str) -> argparse.ArgumentParser:
    """The options every asset command takes: --steps and --out."""
    p = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    p.add_argument("--steps", type=int, help="override the number of training steps (e.g. for a quick check)")
    p.add_argument("--out", default=str(ASSETS_DIR), help="directory to write the model folder(s) into")
    return p


def steps_refused(args) -> bool:
    if args.steps is not None and args.steps < 1:
        print("error: --steps must be a positive whole number", file=sys.stderr)
        return True
    return False


def build_and_report(name: str, corpus: str, train: Callable[..., Trainer], out_dir: Path, steps: Optional[int],
                     numbers: Callable[[Trainer], dict]) -> None:
    """Train one asset, save it, print {name: {steps, numbers(trainer)..., seconds, bytes, out}} as a JSON line."""
    started = time.perf_counter()
    trainer = train(steps, log=log_line)
    path = save_asset(trainer, name, corpus, out_dir)
    print(json.dumps({name: {"steps": trainer.step_count, **numbers(trainer),
                             "seconds": round(time.perf_counter() - started, 1), "bytes": directory_bytes(path),
                             "out": str(path)}}), flush=True)


def one_asset_main(argv, prog: str, doc: str, name: str, corpus: str, train: Callable[..., Trainer],
                   numbers: Callable[[Trainer], dict], threads: Optional[int] = None) -> int:
    """main() of a command that trains one shipped model (model_core.make_grokking_asset, make_induction_asset);
    threads: torch threads to train on (then set back)."""
    args = asset_parser(prog, doc).parse_args(argv)
    if steps_refused(args):
        return 2
    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        build_and_report(name, corpus, train, Path(args.out), args.steps, numbers)
    finally:
        torch.set_num_threads(before)
    return 0


def main(argv=None) -> int:
    p = asset_parser("python -m model_core.make_assets", __doc__)
    p.add_argument("--only", choices=list(ASSETS), help="train just this model (default: all of them)")
    args = p.parse_args(argv)
    if steps_refused(args):
        return 2
    for name in [args.only] if args.only else list(ASSETS):
        build_and_report(name, ASSETS[name].corpus, partial(train_asset, name), Path(args.out), args.steps, losses)
    return 0


def losses(trainer: Trainer) -> dict:
    final = trainer.evals[-1]
    return {"train_loss": round(final["train_loss"], 4), "val_loss": round(final["val_loss"], 4),
            "snapshots": len(trainer.snapshots)}


if __name__ == "__main__":
    sys.exit(main())
