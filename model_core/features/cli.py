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
    transcoders = commands.add_parser("train-transcoders", help="collect every FFN's inputs and outputs, train one "
                                      "TopK transcoder per layer, save the set in circuit-tracer's format")
    _model_and_text(transcoders)
    transcoders.add_argument("--features", type=int, required=True, help="features per layer, e.g. 8 x d_model")
    transcoders.add_argument("--k", type=int, default=32, help="active features per token (default 32)")
    transcoders.add_argument("--skip", action=argparse.BooleanOptionalAction, default=True,
                             help="a linear skip connection beside the features (default: on)")
    transcoders.add_argument("--tokens", type=int, default=262_144, help="pairs to collect and train each layer on")
    transcoders.add_argument("--epochs", type=float, default=2.0, help="passes over the collected pairs")
    transcoders.add_argument("--lr", type=float, default=SAETrainConfig.lr, help="Adam's learning rate")
    transcoders.add_argument("--batch-size", type=int, default=SAETrainConfig.batch_size, help="pairs per step")
    transcoders.add_argument("--seed", type=int, default=0, help="seed of the windows, initialisation and batches")
    transcoders.add_argument("--stats-tokens", type=int, default=65_536, help="validation tokens read for each "
                             "layer's feature statistics (the graph's hover and the feature view); 0: none")
    transcoders.add_argument("--out", required=True, help="folder to write config.yaml and layer_*.safetensors to")
    graph = commands.add_parser("graph", help="the attribution graph of a prompt's next token (circuit-tracer's "
                                "method) on a model with its transcoders, written as safetensors and graph JSON")
    graph.add_argument("--checkpoint", required=True, help="checkpoint folder or .zip")
    graph.add_argument("--transcoders", required=True, help="transcoder set folder (ours or circuit-tracer's)")
    graph.add_argument("--prompt", required=True, help="the text; a start token is put first when it lacks one")
    graph.add_argument("--out", required=True, help="the .safetensors file to write (graph JSON beside it)")
    graph.add_argument("--node-threshold", type=float, default=0.8, help="pruning: share of node influence kept")
    graph.add_argument("--edge-threshold", type=float, default=0.98, help="pruning: share of edge influence kept")
    graph.add_argument("--double", help="LAYER,POS,FEATURE: also write pre-activations and logits before and after "
                       "doubling that feature's activation with attention and norms frozen")
    graph.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
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


def train_transcoders_command(args) -> dict:
    from model_core.features.transcoder import Transcoder, TranscoderConfig, check_model
    from model_core.features.transcoder_evaluation import evaluate_transcoders
    from model_core.features.transcoder_format import save_transcoders, stats_file
    from model_core.features.transcoder_training import TranscoderTrainer, collect_pairs

    start = time.perf_counter()
    ckpt = load_model(args)
    model = ckpt.model.eval()
    check_model(model.cfg)
    train_ids, val_ids, text_name = _splits(args, ckpt)
    window = args.window or min(model.cfg.block_size, 128)
    pairs = collect_pairs(model, train_ids, args.tokens, window, seed=args.seed)
    collected = time.perf_counter() - start
    _log(f"{len(pairs[0]):,} pairs per layer in {collected:.1f} s")
    train_cfg = SAETrainConfig(lr=args.lr, batch_size=args.batch_size, epochs=args.epochs, seed=args.seed)
    transcoders = []
    for layer, layer_pairs in enumerate(pairs):
        torch.manual_seed(args.seed + layer)
        tc = Transcoder(TranscoderConfig(model.cfg.d_model, args.features, args.k, layer, skip=args.skip))
        trainer = TranscoderTrainer(tc, layer_pairs, train_cfg)
        trainer.run(lambda m, layer=layer: _log(f"layer {layer} step {m['step']}/{trainer.total_steps}  "
                                                f"explained variance {m['explained_variance']:.3f}  "
                                                f"dead {m['dead_fraction']:.1%}"),
                    report_every=max(1, trainer.total_steps // 4))
        transcoders.append(tc)
    trained = time.perf_counter() - start
    del pairs
    result = evaluate_transcoders(model, transcoders, val_ids, args.eval_tokens, window).summary()
    extra = {"model_name": ckpt.corpus or str(args.checkpoint), "dataset_path": text_name, "context_size": window,
             "training": {**train_cfg.to_dict(), "tokens": args.tokens}, "seconds_activations": round(collected, 1),
             "seconds_total": round(trained, 1), "evaluation": result}
    save_transcoders(transcoders, args.out, scan=f"transformer-explorer/{ckpt.corpus or 'model'}", extra=extra)
    for tc in transcoders if args.stats_tokens else []:
        feature_stats(model, tc, val_ids[:args.stats_tokens], window).save(args.out, stats_file(tc.cfg.layer))
    _log(f"saved to {args.out} ({trained:.1f} s to collect and train, {time.perf_counter() - start:.1f} s in all)")
    return {**result, "seconds": round(trained, 1)}


def graph_command(args) -> dict:
    from model_core.features.graph_files import write_graph_files
    return write_graph_files(args)


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
        command = {"train": train_command, "train-transcoders": train_transcoders_command, "graph": graph_command,
                   "evaluate": evaluate_command}[args.command]
        result = command(args)
    except ValueError as err:  # every error of ours carries its fix
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0
