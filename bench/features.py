"""SAE training side by side with SAELens: python -m bench.features [--tokens N] [--k 32 8] [--no-saelens].

Targets (issue #32, 2 cores): the shipped Shakespeare model, 1,024 features at blocks.2.hook_resid_post, TopK 32:
collect + train ≤ 2 min, dead ≤ 1 % (issue #41), explained variance ≥ 0.95, CE loss recovered ≥ 0.97; and against SAELens
(a benchmark dependency only) on the same activations with the same width, k and token budget: our explained
variance and CE loss recovered equal or better, our time equal or less. Both are evaluated by our
evaluation (model_core.features.evaluation) on the same validation windows; SAELens's SAE is written by its
own save_inference_model and read back by our loader (the format check). Each row reports wall seconds and
CPU seconds of this process: on a machine shared with other work the CPU time is what the wall time would
be on otherwise idle cores (with --threads 1 exactly; with 2 threads CPU / 2 is a lower bound)."""
import argparse
import json
import os
import tempfile
import time

import torch

from bench.results import Row, at_least, at_most, info, run_main
from bench.timing import print_table
from model_core.checkpoints.checkpoint import load_checkpoint
from model_core.features.activations import collect_activations
from model_core.features.evaluation import evaluate_sae
from model_core.features.sae import SAEConfig, SparseAutoencoder
from model_core.features.saelens_format import load_sae
from model_core.features.texts import text_splits
from model_core.features.training import SAETrainConfig, SAETrainer, default_dead_tokens

MODEL, HOOK, FEATURES = "explorer/assets/models/shakespeare", "blocks.2.hook_resid_post", 1024
TARGETS = {"seconds": 120.0, "dead_fraction": 0.01, "explained_variance": 0.95, "ce_loss_recovered": 0.97}


def clock():
    return time.perf_counter(), time.process_time()


def since(start) -> tuple[float, float]:
    return time.perf_counter() - start[0], time.process_time() - start[1]


def ours(acts: torch.Tensor, k: int, cfg: SAETrainConfig) -> SparseAutoencoder:
    torch.manual_seed(cfg.seed)
    sae = SparseAutoencoder(SAEConfig(acts.shape[1], FEATURES, "topk", k, HOOK, "shakespeare"))
    SAETrainer(sae, acts, cfg).run()
    return sae


def saelens(acts: torch.Tensor, k: int, batch_size: int, epochs: float, lr: float, seed: int,
            dead_tokens: int) -> SparseAutoencoder:
    """SAELens's own TopK training SAE and trainer (AuxK on, our dead window, its defaults otherwise) fed our
    activations."""
    from sae_lens import TopKTrainingSAE, TopKTrainingSAEConfig
    from sae_lens.config import SAETrainerConfig
    from sae_lens.training.sae_trainer import SAETrainer as LensTrainer

    torch.manual_seed(seed)
    n = int(epochs * len(acts)) // batch_size * batch_size
    sae = TopKTrainingSAE(TopKTrainingSAEConfig(d_in=acts.shape[1], d_sae=FEATURES, k=k))
    gen = torch.Generator().manual_seed(seed)

    def batches():
        while True:
            for index in torch.randperm(len(acts), generator=gen).split(batch_size):
                if len(index) == batch_size:
                    yield acts[index]

    cfg = SAETrainerConfig(total_training_samples=n, train_batch_size_samples=batch_size, lr=lr, lr_end=lr,
                           dead_feature_window=max(1, dead_tokens // batch_size))
    LensTrainer(cfg, sae, batches()).fit()
    with tempfile.TemporaryDirectory() as folder:
        sae.cfg.metadata.hook_name = HOOK
        sae.save_inference_model(folder)
        return load_sae(folder)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.features", description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=524_288, help="activations collected and trained on")
    p.add_argument("--k", type=int, nargs="+", default=[32, 8])
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=SAETrainConfig.batch_size)
    p.add_argument("--lr", type=float, default=SAETrainConfig.lr)
    p.add_argument("--init", nargs="+", default=[SAETrainConfig.init], help="our decoder initialisations to run")
    p.add_argument("--dead-tokens", type=int, default=SAETrainConfig.dead_tokens,
                   help="tokens without firing after which a feature counts as dead (both trainers' AuxK; default "
                   "320 x features / k)")
    p.add_argument("--aux-coefficient", type=float, default=SAETrainConfig.aux_coefficient,
                   help="our AuxK loss's weight")
    p.add_argument("--saelens-lr", type=float, nargs="+", default=[3e-4], help="SAELens's default is 3e-4")
    p.add_argument("--no-saelens", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--eval-tokens", type=int, default=32_768)
    p.add_argument("--cache", help="keep the activations in this .pt file and reuse them (tuning runs)")
    return p.parse_args(argv)


def saelens_installed() -> bool:
    try:
        import sae_lens  # noqa: F401
    except ImportError:
        return False
    return True


def target_rows(result: dict, collect_seconds: float) -> list[Row]:
    """Issue #32's targets for one SAE of ours (k = 32)."""
    name = f"{result['name']}, k {result['k']}"
    return [at_most(f"{name}: collect + train, wall", collect_seconds + result["train_wall"], "s", TARGETS["seconds"]),
            at_most(f"{name}: dead features", result["dead_fraction"], "", TARGETS["dead_fraction"]),
            at_least(f"{name}: explained variance", result["explained_variance"], "", TARGETS["explained_variance"]),
            at_least(f"{name}: CE loss recovered", result["ce_loss_recovered"], "", TARGETS["ce_loss_recovered"])]


def against_saelens(ours: dict, theirs: dict) -> list[Row]:
    """Ours equal or better than SAELens's at the same k: explained variance, CE loss recovered, training time."""
    name = f"{ours['name']} - {theirs['name']}, k {ours['k']}"
    return [at_least(f"{name}: explained variance", ours["explained_variance"] - theirs["explained_variance"], "", 0),
            at_least(f"{name}: CE loss recovered", ours["ce_loss_recovered"] - theirs["ce_loss_recovered"], "", 0),
            at_most(f"{ours['name']} / {theirs['name']}, k {ours['k']}: training wall time",
                    ours["train_wall"] / theirs["train_wall"], "x", 1.0)]


def result_rows(results: list[dict], collect_seconds: float) -> list[Row]:
    """The targets for our k=32 SAEs, each of ours against each SAELens run at its k, the rest informative."""
    rows = []
    for r in results:
        if r["name"].startswith("ours"):
            rows += target_rows(r, collect_seconds) if r["k"] == 32 else [
                info(f"{r['name']}, k {r['k']}: explained variance", r["explained_variance"])]
            rows += [row for theirs in results if theirs["k"] == r["k"] and theirs["name"].startswith("SAELens")
                     for row in against_saelens(r, theirs)]
    return rows


def activations(model, train_ids, args) -> tuple[torch.Tensor, tuple[float, float]]:
    """(the activations at HOOK, (wall, CPU) seconds their collection took), from --cache when it has them."""
    if args.cache and os.path.exists(args.cache):
        return torch.load(args.cache)
    start = clock()
    acts = collect_activations(model, train_ids, HOOK, args.tokens, model.cfg.block_size)
    collect = since(start)
    if args.cache:
        torch.save((acts, collect), args.cache)
    return acts, collect


def measure(argv=None) -> list[Row]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"load before: {os.getloadavg()[0]:.1f} (2 cores), threads {args.threads}")
    ckpt = load_checkpoint(MODEL)
    train_ids, val_ids, _ = text_splits(ckpt.tokenizer, "shakespeare")
    acts, collect = activations(ckpt.model, train_ids, args)
    rows, results = [], []
    with_saelens = not args.no_saelens and saelens_installed()
    if not args.no_saelens and not with_saelens:
        print("SAELens is not installed (pip install -c requirements.txt -r requirements-bench.txt): ours only")
    for k in args.k:
        contenders = {f"ours ({init} init)": lambda init=init: ours(acts, k, SAETrainConfig(
            lr=args.lr, batch_size=args.batch_size, epochs=args.epochs, init=init, dead_tokens=args.dead_tokens,
            aux_coefficient=args.aux_coefficient)) for init in args.init}
        if with_saelens:
            for lr in args.saelens_lr:
                contenders[f"SAELens lr {lr:g}"] = lambda lr=lr: saelens(acts, k, args.batch_size, args.epochs, lr, 0,
                                                                         args.dead_tokens or default_dead_tokens(FEATURES, k))
        for name, train in contenders.items():
            start = clock()
            sae = train()
            wall, cpu = since(start)
            ev = evaluate_sae(ckpt.model, sae, val_ids, args.eval_tokens)
            total = wall + collect[0]
            met = {"seconds": total <= TARGETS["seconds"], "dead_fraction": ev.dead_fraction <= TARGETS["dead_fraction"],
                   "explained_variance": ev.explained_variance >= TARGETS["explained_variance"],
                   "ce_loss_recovered": ev.ce_loss_recovered >= TARGETS["ce_loss_recovered"]}
            rows.append([name, k, f"{collect[0]:.1f} / {collect[1]:.1f}", f"{wall:.1f} / {cpu:.1f}",
                         f"{ev.explained_variance:.4f}", f"{ev.ce_loss_recovered:.4f}", f"{ev.l0:.1f}",
                         f"{ev.dead_fraction:.1%}", "all met" if all(met.values()) else
                         "missed: " + ", ".join(m for m, ok in met.items() if not ok),
                         f"{os.getloadavg()[0]:.1f}"])
            results.append({"name": name, "k": k, **ev.summary(), "train_wall": wall, "train_cpu": cpu})
            print(" | ".join(map(str, rows[-1])), flush=True)
    print_table(f"{FEATURES} features at {HOOK} of the shipped Shakespeare model, {len(acts):,} activations, "
                f"{args.epochs:g} epoch(s), batch {args.batch_size}; evaluated on {args.eval_tokens:,} validation "
                "tokens", ["trainer", "k", "collect s wall / CPU", "train s wall / CPU", "explained var",
                           "CE recovered", "L0", "dead", "targets (k=32 row)", "load"], rows)
    print(json.dumps([{k: v for k, v in r.items() if k != "log_density_histogram"} for r in results]))
    missing = [] if with_saelens or args.no_saelens else [info("SAELens comparison", "not run: sae-lens not installed")]
    return result_rows(results, collect[0]) + missing


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
