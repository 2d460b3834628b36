"""Train and evaluate SAEs from the command line:

  python -m model_core.features train --checkpoint DIR --hook blocks.2.hook_resid_post --features 1024 --k 32 \\
      --tokens 524288 --out DIR
  python -m model_core.features evaluate --checkpoint DIR --sae DIR

--checkpoint is a checkpoint folder or .zip written by this app, or a .gguf file (SmolLM2's). The text is the
checkpoint's own training corpus when it is a built-in one, else --corpus NAME or --text-file PATH. Both
commands print the evaluation as JSON on their last line (explained_variance, ce_loss_recovered, l0,
dead_fraction, ...); progress goes to stderr."""
import argparse
import json
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from model_core.checkpoints.checkpoint import load_checkpoint
from model_core.features.activations import check_hook, collect_activations
from model_core.features.dashboard import feature_stats
from model_core.features.evaluation import EVAL_TOKENS, evaluate_sae
from model_core.features.sae import SAEConfig, SparseAutoencoder
from model_core.features.saelens_format import load_sae, save_sae
from model_core.features.texts import TEXT_NAMES, text_splits
from model_core.features.training import SAETrainConfig, SAETrainer


class OneLineParser(argparse.ArgumentParser):
    """Reports a bad flag in one line and exits with status 2 (as python -m model_core.train does)."""

    def error(self, message):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m model_core.features", description="Sparse autoencoders (SAEs) on a model's "
                      "activations: train one, or evaluate one (ours or SAELens's).")
    commands = p.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="collect activations, train an SAE, save it in SAELens's format")
    _model_and_text(train)
    train.add_argument("--hook", required=True, help="hook point, e.g. blocks.2.hook_resid_post or blocks.1.mlp.hook_post")
    train.add_argument("--features", type=int, required=True, help="number of features (d_sae), e.g. 8 x d_model")
    sparsity = train.add_mutually_exclusive_group()
    sparsity.add_argument("--k", type=int, help="TopK SAE: active features per token (default 32)")
    sparsity.add_argument("--l1", type=float, help="ReLU SAE trained with this L1 coefficient instead of TopK")
    train.add_argument("--tokens", type=int, default=524_288, help="activations to collect and train on")
    train.add_argument("--epochs", type=float, default=1.0, help="passes over the collected activations")
    train.add_argument("--lr", type=float, default=SAETrainConfig.lr, help="Adam's learning rate")
    train.add_argument("--batch-size", type=int, default=SAETrainConfig.batch_size, help="activations per step")
    train.add_argument("--seed", type=int, default=0, help="seed of the windows, the initialisation and the batches")
    train.add_argument("--out", required=True, help="folder to write cfg.json and sae_weights.safetensors to")
    train.add_argument("--activations", help="a .safetensors file: read the activations from it if it exists, "
                       "else collect them and keep them there (to try other settings without collecting again)")
    train.add_argument("--stats-tokens", type=int, default=65_536, help="validation tokens read for the feature "
                       "statistics the app shows (feature_stats.safetensors); 0: none")
    evaluate = commands.add_parser("evaluate", help="L0, dead fraction, explained variance, CE loss recovered")
    _model_and_text(evaluate)
    evaluate.add_argument("--sae", required=True, help="SAE folder (or .zip): ours or SAELens's")
    return p


def _model_and_text(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", required=True, help="checkpoint folder or .zip, or a .gguf file")
    p.add_argument("--block-size", type=int, default=512, help=".gguf only: the context to open the model with")
    p.add_argument("--corpus", choices=TEXT_NAMES, help="built-in text (default: the checkpoint's training corpus)")
    p.add_argument("--text-file", help="your own UTF-8 text instead of a built-in one")
    p.add_argument("--max-chars", type=int, help="read only the text's first characters")
    p.add_argument("--window", type=int, help="tokens per window (default: the block size, at most 128)")
    p.add_argument("--eval-tokens", type=int, default=EVAL_TOKENS, help="validation tokens the evaluation reads")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")


def load_model(args):
    """The checkpoint named by --checkpoint (a .gguf file is converted on the fly)."""
    path = Path(args.checkpoint)
    if path.suffix.lower() == ".gguf":
        from model_core.checkpoints.gguf import load_gguf
        return load_gguf(path, block_size=args.block_size)
    return load_checkpoint(path)


def _splits(args, ckpt):
    corpus = args.corpus or (None if args.text_file else ckpt.corpus)
    if not args.text_file and corpus not in TEXT_NAMES:
        raise ValueError(f"the checkpoint was trained on {ckpt.corpus!r}, not a built-in text: give --corpus or "
                         "--text-file.")
    return text_splits(ckpt.tokenizer, corpus, args.text_file, args.max_chars)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _activations(args, model, train_ids, window: int) -> torch.Tensor:
    """Collected activations, or the ones kept in --activations (checked against the hook's width)."""
    if args.activations and Path(args.activations).is_file():
        acts = load_file(args.activations)["activations"]
        if acts.ndim != 2 or acts.shape[1] != check_hook(model.cfg, args.hook):
            raise ValueError(f"{args.activations} holds activations of shape {list(acts.shape)}, not {args.hook}'s.")
        return acts[:args.tokens]
    acts = collect_activations(model, train_ids, args.hook, args.tokens, window, seed=args.seed)
    if args.activations:
        save_file({"activations": acts.contiguous()}, args.activations)
    return acts


def train_command(args) -> dict:
    start = time.perf_counter()
    ckpt = load_model(args)
    model = ckpt.model.eval()
    d_in = check_hook(model.cfg, args.hook)
    train_ids, val_ids, text_name = _splits(args, ckpt)
    window = args.window or min(model.cfg.block_size, 128)
    acts = _activations(args, model, train_ids, window)
    collected = time.perf_counter() - start
    _log(f"{len(acts):,} activations at {args.hook} in {collected:.1f} s")
    architecture = "standard" if args.l1 is not None else "topk"
    train_cfg = SAETrainConfig(lr=args.lr, batch_size=args.batch_size, epochs=args.epochs, seed=args.seed,
                               **({"l1_coefficient": args.l1} if args.l1 is not None else {}))
    torch.manual_seed(args.seed)
    sae = SparseAutoencoder(SAEConfig(d_in, args.features, architecture, args.k or 32, args.hook,
                                      ckpt.corpus or str(args.checkpoint)))
    trainer = SAETrainer(sae, acts, train_cfg)
    trainer.run(lambda m: _log(f"step {m['step']}/{trainer.total_steps}  loss {m['loss']:.4f}  l0 {m['l0']:.1f}  "
                               f"explained variance {m['explained_variance']:.3f}  dead {m['dead_fraction']:.1%}"),
                report_every=max(1, trainer.total_steps // 10))
    trained = time.perf_counter() - start
    del acts
    result = evaluate_sae(model, sae, val_ids, args.eval_tokens, window).summary()
    sae.cfg.extra.update(dataset_path=text_name, context_size=window,
                         training={**train_cfg.to_dict(), "dead_tokens": trainer.dead_tokens},
                         training_tokens=args.tokens, seconds_activations=round(collected, 1),
                         seconds_total=round(trained, 1), evaluation={k: v for k, v in result.items()
                                                                      if k != "log_density_histogram"})
    save_sae(sae, args.out)
    if args.stats_tokens:
        feature_stats(model, sae, val_ids[:args.stats_tokens], window).save(args.out)
    _log(f"saved to {args.out} ({trained:.1f} s to collect and train, {time.perf_counter() - start:.1f} s in all)")
    return {**result, "seconds": round(trained, 1)}


def evaluate_command(args) -> dict:
    ckpt = load_model(args)
    model = ckpt.model.eval()
    sae = load_sae(args.sae)
    width = check_hook(model.cfg, sae.cfg.hook_name)
    if width != sae.cfg.d_in:
        raise ValueError(f"the SAE reads {sae.cfg.d_in}-wide activations but {sae.cfg.hook_name} is {width} wide "
                         "in this model: it was trained on another model.")
    _, val_ids, _ = _splits(args, ckpt)
    window = args.window or min(model.cfg.block_size, 128)
    return evaluate_sae(model, sae, val_ids, args.eval_tokens, window).summary()


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        result = (train_command if args.command == "train" else evaluate_command)(args)
    except ValueError as err:  # every error of ours carries its fix
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0
