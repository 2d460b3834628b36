"""Transcoders and attribution graphs on the Shakespeare model: python -m bench.graphs [--tokens N] [--prompts N].

Targets (issue #44, 2 cores): transcoders for every layer (1,024 features, TopK 32, skip connections, 262,144 pairs,
2 epochs: the shipped set's recipe) collected and trained in ≤ 3 min, and with every FFN replaced by its
transcoder the loss within 0.15 nats of the model's; the graph of a 32-token prompt in ≤ 5 s, pruned (node
threshold 0.8, edge threshold 0.98) to ≤ 200 nodes, its replacement and completeness scores reported. The graphs
are timed on the shipped transcoders, several prompts from the validation text (the hard case: every prompt is
new), their median and slowest reported. Wall and CPU seconds of this process are reported: on a shared machine the
CPU time is what the wall time would be on idle cores (CPU / threads is a lower bound)."""
import argparse
import statistics
import time

import torch

from bench.results import Row, at_most, info, run_main
from model_core.analysis.attribution_graph import attribution_graph
from model_core.analysis.graph_pruning import graph_scores, prune_graph
from model_core.checkpoints.checkpoint import load_checkpoint
from model_core.features.texts import text_splits
from model_core.features.training import SAETrainConfig
from model_core.features.transcoder import Transcoder, TranscoderConfig
from model_core.features.transcoder_evaluation import evaluate_transcoders
from model_core.features.transcoder_format import load_transcoders
from model_core.features.transcoder_training import TranscoderTrainer, collect_pairs

MODEL, SHIPPED = "explorer/assets/models/shakespeare", "explorer/assets/transcoders/shakespeare"
PROMPT_TOKENS = 32


def train_rows(model, train_ids, val_ids, tokens: int) -> list[Row]:
    wall, cpu = time.perf_counter(), time.process_time()
    pairs = collect_pairs(model, train_ids, tokens, 64)
    transcoders = []
    for layer, layer_pairs in enumerate(pairs):
        torch.manual_seed(layer)
        tc = Transcoder(TranscoderConfig(model.cfg.d_model, 1024, 32, layer, skip=True))
        TranscoderTrainer(tc, layer_pairs, SAETrainConfig(epochs=2.0)).run()
        transcoders.append(tc)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    evaluation = evaluate_transcoders(model, transcoders, val_ids, window=64)
    return [at_most("transcoders, every layer: collect + train, wall", wall, "s", 180),
            info("transcoders, every layer: collect + train, CPU", cpu, "s"),
            at_most("loss with every FFN replaced - the model's", evaluation.loss_gap, "nats", 0.15),
            info("explained variance of each FFN's output", " / ".join(f"{v:.3f}" for v in evaluation.explained_variance)),
            info("dead features per layer", " / ".join(f"{v:.1%}" for v in evaluation.dead_fraction))]


def graph_rows(model, transcoders, val_ids, n_prompts: int) -> list[Row]:
    newline = [int(i) for i in (val_ids == 0).nonzero().flatten()[:n_prompts * 50:50]]  # id 0 is the line break
    seconds, sizes, scores = [], [], []
    for at in newline[:n_prompts]:
        tokens = val_ids[at:at + PROMPT_TOKENS]  # a line break first: the start token (docs/attribution-graphs.md)
        wall = time.perf_counter()
        graph = attribution_graph(model, transcoders, tokens)
        pruned = prune_graph(graph)
        scores.append(graph_scores(graph))
        seconds.append(time.perf_counter() - wall)
        sizes.append(int(pruned.node_mask.sum()))
    return [at_most(f"graph of a {PROMPT_TOKENS}-token prompt with pruning and scores, median wall",
                    statistics.median(seconds), "s", 5), info("the slowest of them", max(seconds), "s"),
            at_most("nodes after pruning, largest", max(sizes), "", 200),
            info("replacement score, median", statistics.median(s[0] for s in scores)),
            info("completeness score, median", statistics.median(s[1] for s in scores)),
            info("prompts", len(seconds))]


def measure(argv=None) -> list[Row]:
    p = argparse.ArgumentParser(prog="python -m bench.graphs")
    p.add_argument("--tokens", type=int, default=262_144, help="pairs per layer for the training measurement")
    p.add_argument("--prompts", type=int, default=8, help="prompts whose graphs are timed")
    p.add_argument("--no-training", action="store_true", help="time the graphs only")
    args = p.parse_args(argv)
    ckpt = load_checkpoint(MODEL)
    model = ckpt.model.eval().requires_grad_(False)
    train_ids, val_ids, _ = text_splits(ckpt.tokenizer, ckpt.corpus, None, None)
    transcoders, _ = load_transcoders(SHIPPED)
    rows = graph_rows(model, transcoders, val_ids, args.prompts)
    return rows if args.no_training else rows + train_rows(model, train_ids, val_ids, args.tokens)


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
