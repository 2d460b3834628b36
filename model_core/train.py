"""Train a GPT from the command line:  python -m model_core.train --corpus shakespeare --max-seconds 60

Progress goes to stderr (tqdm); at the end one JSON line with the results goes to stdout.
Several processes (one per GPU, or a few CPU processes):  torchrun --nproc_per_node=2 -m model_core.train ...
splits each step's batch over the processes; rank 0 logs and writes the checkpoint."""
import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

import torch
from tqdm import tqdm

from model_core.checkpoints.checkpoint import Checkpoint, save_checkpoint
from model_core.data.corpora import CORPORA, load_corpus, load_text_file
from model_core.data.dataset import DEFAULT_VAL_FRACTION, split_by_val_fraction, token_tensor, val_or_none
from model_core.data.tasks.choices import FULL_BATCH_TASKS
from model_core.data.tasks.registry import TASKS, make_task
from model_core.data.tokenization import TOKENIZER_KINDS, build_tokenizer
from model_core.model.config import ACTIVATIONS, INITS, NORM_PLACEMENTS, NORMS, POSITIONALS
from model_core.model.gpt import GPT
from model_core.training.distributed import check_batch_splits, end_process_group, start_process_group, world_from_env
from model_core.training.presets import DEFAULT_PRESET, PRESETS, get_preset
from model_core.training.train_config import DEVICES, OPTIMIZERS, PRECISIONS
from model_core.training.trainer import Trainer, TrainingError


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line (no usage dump) and exits with status 2."""

    def error(self, message):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m model_core.train", description="Train a small GPT on a text.")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--corpus", choices=CORPORA,
                        help="built-in text to train on (default: the preset's own, else shakespeare)")
    source.add_argument("--text-file", help="path of your own UTF-8 text file to train on")
    source.add_argument("--task", choices=list(TASKS),
                        help="an algorithmic task instead of a text (the grokking and induction-phase presets "
                             "bring their own); its spec, with the prompt format, is saved in config.json under "
                             "train_config.task")
    p.add_argument("--task-setting", action="append", default=[], metavar="KEY=VALUE",
                   help="change one setting of the task, e.g. p=113 or train_fraction=0.3 (repeatable)")
    p.add_argument("--tokenizer", choices=TOKENIZER_KINDS,
                   help="how text becomes tokens (default: the preset's own, else char)")
    p.add_argument("--bpe-vocab", type=int, help="vocabulary size of the bpe tokenizer (256..4096, default 512)")
    p.add_argument("--val-fraction", type=float,
                   help="share of the text held out for validation (default 0.1); 0: no validation split, the "
                        "model is evaluated on its training text (for one-sentence corpora such as toy-words)")
    p.add_argument("--preset", choices=list(PRESETS), default=DEFAULT_PRESET,
                   help="model size and training settings to start from; the flags below override it")
    arch = p.add_argument_group("architecture (overrides the preset)")
    arch.add_argument("--d-model", type=int, help="width of the residual stream")
    arch.add_argument("--n-heads", type=int, help="attention heads per layer (must divide d-model)")
    arch.add_argument("--n-layers", type=int, help="number of transformer blocks")
    arch.add_argument("--d-mlp", type=int, help="FFN width (default: the preset's, or 4 x d-model)")
    arch.add_argument("--block-size", type=int, help="context length in tokens")
    arch.add_argument("--norm", choices=NORMS, help="normalisation layer")
    arch.add_argument("--norm-placement", choices=NORM_PLACEMENTS, help="pre-norm (GPT-2) or post-norm (2017)")
    arch.add_argument("--activation", choices=ACTIVATIONS, help="feed-forward non-linearity")
    arch.add_argument("--positional", choices=POSITIONALS,
                      help="learned or sinusoidal position vectors, rope (rotary q and k), or none")
    arch.add_argument("--qk-norm", action=argparse.BooleanOptionalAction, default=None,
                      help="RMSNorm on each head's queries and keys")
    arch.add_argument("--tie-weights", action=argparse.BooleanOptionalAction, default=None,
                      help="share the token embedding with the unembedding")
    arch.add_argument("--attn-only", action="store_true", default=None, help="blocks without a feed-forward layer")
    arch.add_argument("--dropout", type=float, help="dropout probability while training (0 to 0.2 typical)")
    arch.add_argument("--init", choices=INITS, help="how the weights start: gpt2 (N(0, 0.02²)) or 1/sqrt(d_model) "
                      "(Nanda et al.'s grokking model)")
    train = p.add_argument_group("training (overrides the preset)")
    train.add_argument("--batch-size", type=int,
                       help="windows per optimisation step, over all processes (torchrun splits it evenly)")
    train.add_argument("--lr", type=float, help="peak learning rate")
    train.add_argument("--min-lr", type=float, help="floor of the cosine decay (default lr / 10; = --lr: flat)")
    train.add_argument("--weight-decay", type=float, help="AdamW weight decay of the weight matrices (0: none)")
    train.add_argument("--decay-embeddings", action=argparse.BooleanOptionalAction, default=None,
                       help="weight decay on the embedding tables too (Nanda et al.'s grokking run decays everything)")
    train.add_argument("--grad-clip", type=float, help="clip the gradient norm to this (0: off)")
    train.add_argument("--optimizer", choices=OPTIMIZERS,
                       help="adamw for everything, or muon for the blocks' matrices (AdamW at --lr for the rest)")
    train.add_argument("--muon-lr", type=float, help="Muon's peak learning rate (with --optimizer muon)")
    train.add_argument("--muon-ns-steps", type=int,
                       help="Newton-Schulz iterations per Muon update (5: torch's default; 3: cheaper)")
    train.add_argument("--precision", choices=PRECISIONS,
                       help="fp32, or bf16 autocast (needs a GPU with bfloat16 or a CPU with AVX512-BF16/AMX)")
    train.add_argument("--compile", action="store_true", default=None,
                       help="torch.compile the training forward pass (CUDA GPUs only)")
    train.add_argument("--max-steps", type=int, help="optimisation steps (the lr schedule ends here)")
    train.add_argument("--max-seconds", type=float, help="stop after this many seconds of training")
    train.add_argument("--eval-interval", type=int,
                       help="estimate train/val loss every N steps (0: only once, at the end)")
    train.add_argument("--eval-iters", type=int, help="batches per loss estimate")
    train.add_argument("--seed", type=int, help="random seed (same seed on CPU, same run)")
    train.add_argument("--device", choices=DEVICES, help="where to train; auto picks cuda, mps, then cpu")
    p.add_argument("--out", help="checkpoint directory to write (default: runs/<corpus>-<preset>)")
    return p


def apply_preset_data(args, preset) -> None:
    """Fill --corpus, --tokenizer, --bpe-vocab and --val-fraction left unset from the preset's own data (a
    seed preset reproduces its tutorial with no other flag), else the usual defaults."""
    data = preset.data
    if not args.text_file and args.corpus is None:
        args.corpus = data.get("corpus", "shakespeare")
    args.tokenizer = args.tokenizer or data.get("tokenizer", "char")
    args.bpe_vocab = args.bpe_vocab or data.get("bpe_vocab")
    if args.val_fraction is None:
        args.val_fraction = data.get("val_fraction", DEFAULT_VAL_FRACTION)


def load_text(args, block_size: int) -> tuple[str, str]:
    """(text, corpus label) from --text-file or --corpus."""
    if args.text_file:
        text = load_text_file(args.text_file, block_size=block_size, val_fraction=args.val_fraction)
        return text, f"file:{Path(args.text_file).name}"
    name = args.corpus or "shakespeare"
    return load_corpus(name), name


def fitted_block_size(args, preset_block: int, n_train: int):
    """--block-size as given; without it the preset's, shortened (with a note) when the training text is
    shorter than one window of it, so a one-sentence corpus trains with any preset."""
    if args.block_size or n_train > preset_block:
        return args.block_size
    fitted = max(n_train - 1, 1)
    print(f"note: the training text has {n_train} tokens, fewer than one window of the preset's block size "
          f"{preset_block} + 1: using block size {fitted} (set --block-size to choose).", file=sys.stderr)
    return fitted


def task_spec(args, preset):
    """The task to train on (--task, else the preset's own unless a text was asked for) with --task-setting
    applied, or None for a text."""
    spec = None
    if args.task:
        own = preset.data.get("task") or {}
        spec = dict(own) if own.get("name") == args.task else {"name": args.task}
    elif not args.text_file and args.corpus is None:
        spec = preset.data.get("task")
    if spec is None:
        if args.task_setting:
            raise ValueError("--task-setting changes a task: give --task (or a preset with a task) too.")
        return None
    spec = dict(spec)
    for item in args.task_setting:
        key, _, value = item.partition("=")
        if not key or not value:
            raise ValueError(f"--task-setting {item!r}: write KEY=VALUE, e.g. p=113.")
        spec[key.strip()] = json.loads(value) if value.strip()[:1] in "0123456789-." else value.strip()
    return make_task(spec).spec()


def training_data(args, preset):
    """(tokenizer, train data, validation data, corpus label, task spec or None, block size from the data or
    None)."""
    spec = task_spec(args, preset)
    if spec is not None:
        task = make_task(spec)
        train_data, val_data = task.splits()
        return task.tokenizer(), train_data, val_data, f"task:{task.name}", spec, getattr(task, "block_size", None)
    apply_preset_data(args, preset)
    block_size = args.block_size or preset.model["block_size"]
    text, corpus = load_text(args, block_size)
    tokenizer = build_tokenizer(args.tokenizer, text, args.bpe_vocab)
    train_data, val_data = split_by_val_fraction(token_tensor(tokenizer.encode(text)), args.val_fraction)
    return tokenizer, train_data, val_data, corpus, None, None


def full_batch(spec, train_data) -> Optional[int]:
    """The number of training examples for a task trained full batch (FULL_BATCH_TASKS, as the Train tab does),
    else None (the preset's batch size)."""
    return len(train_data) if spec and spec.get("name") in FULL_BATCH_TASKS else None


def task_preset_trainer(preset_name: str, seed: Optional[int] = None, **train_overrides) -> Trainer:
    """The trainer of a task preset (grokking, induction-phase) on its own task, on the CPU, built as
    `python -m model_core.train --preset NAME` builds it: full batch for a task trained so, the model initialised
    from the run's seed. Overrides left None keep the preset's setting."""
    preset = get_preset(preset_name)
    task = make_task(preset.data["task"])
    train_data, val_data = task.splits()
    full = full_batch(task.spec(), train_data)
    cfg = preset.train_config(**{"task": task.spec(), "device": "cpu", "seed": seed, "batch_size": full,
                                 "eval_iters": full and 1, **train_overrides})
    torch.manual_seed(cfg.seed)  # model initialisation
    return Trainer(GPT(preset.model_config(task.tokenizer().vocab_size)), train_data, val_data, cfg, task.tokenizer())


def train(args) -> dict:
    """Run the whole pipeline for parsed args; returns the summary printed as JSON."""
    preset = get_preset(args.preset)
    tokenizer, train_data, val_data, corpus, spec, task_block = training_data(args, preset)
    if task_block and train_data.dim() == 3:  # examples: the block holds one example
        args.block_size = args.block_size or task_block
    model_cfg = preset.model_config(
        tokenizer.vocab_size, d_model=args.d_model, n_heads=args.n_heads, n_layers=args.n_layers, d_mlp=args.d_mlp,
        block_size=fitted_block_size(args, preset.model["block_size"], len(train_data)), norm=args.norm,
        norm_placement=args.norm_placement,
        activation=args.activation, positional=args.positional, qk_norm=args.qk_norm, tie_weights=args.tie_weights,
        attn_only=args.attn_only, dropout=args.dropout, init=args.init,
    )
    full = full_batch(spec, train_data)
    train_cfg = preset.train_config(
        batch_size=args.batch_size or full, lr=args.lr, weight_decay=args.weight_decay, task=spec,
        min_lr=args.min_lr, decay_embeddings=args.decay_embeddings, grad_clip=args.grad_clip,
        max_steps=args.max_steps, eval_interval=args.eval_interval,
        eval_iters=args.eval_iters or (full and 1), seed=args.seed, device=args.device, optimizer=args.optimizer,
        muon_lr=args.muon_lr, muon_ns_steps=args.muon_ns_steps, precision=args.precision, compile=args.compile,
    )
    world = world_from_env()
    check_batch_splits(train_cfg.batch_size, world)  # before joining the other processes
    start_process_group(world, cuda=train_cfg.device in ("auto", "cuda") and torch.cuda.is_available())
    torch.manual_seed(train_cfg.seed)  # model initialisation (DDP then copies rank 0's weights to all)
    trainer = Trainer(GPT(model_cfg), train_data, val_or_none(val_data), train_cfg, tokenizer)
    started = time.perf_counter()
    with tqdm(total=train_cfg.max_steps, file=sys.stderr, unit="step", dynamic_ncols=True,
              disable=not world.is_main) as bar:
        trainer.run(max_seconds=args.max_seconds, callback=lambda m: progress(bar, m))
    if not world.is_main:
        return None
    final = trainer.evals[-1] if trainer.evals else trainer.evaluate()
    out = Path(args.out or f"runs/{corpus.replace(':', '-')}-{args.preset}")
    summary_extra = {k: final[k] for k in ("train_acc", "val_acc", "induction", "icl") if k in final}
    save_checkpoint(Checkpoint.from_trainer(trainer, corpus), out)
    tokens = trainer.step_count * train_cfg.batch_size * model_cfg.block_size
    return {
        "steps": trainer.step_count,
        "train_loss": final["train_loss"],
        "val_loss": final["val_loss"],
        "tokens_per_sec": round(tokens / trainer.elapsed, 1) if trainer.elapsed else 0.0,
        "seconds": round(time.perf_counter() - started, 2),
        "params": trainer.model.num_params(),
        "out": str(out),
        **summary_extra,
    }


def progress(bar, metrics: dict) -> None:
    if "loss" in metrics:
        bar.update(1)
        if metrics["step"] % 10 == 0:
            bar.set_postfix(loss=f"{metrics['loss']:.3f}", refresh=False)
    if "eval" in metrics:
        ev = metrics["eval"]
        val = ("(no validation split: evaluated on the training text)" if ev["val_loss"] is None
               else f"val {ev['val_loss']:.4f}")
        measures = " ".join(f"{k} {ev[k]:.3f}" for k in ("train_acc", "val_acc", "induction", "icl") if k in ev)
        bar.write(f"step {metrics['step']}: train {ev['train_loss']:.4f} {val} {measures}".rstrip(), file=sys.stderr)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        summary = train(args)
    except (ValueError, TrainingError) as err:  # the project's errors all carry a user-facing message
        if os.environ.get("RANK", "0") == "0":  # under torchrun every rank fails alike: say it once
            print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    finally:
        end_process_group()
    if summary is not None:  # rank 0 only under torchrun
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
