"""Train the "induction" demo model shipped in explorer/assets/models/induction/:  python -m model_core.make_induction_asset

A small attention-only model trained on Shakespeare in which short passages are shown three times in a row:
reading a passage again, a model that copies ("after this token came that token last time") predicts it, so
induction heads pay off and form (with two showings, 3,000 steps gave a best head of 0.29 on the probe; with
three, 2,000 steps give more: docs/circuits.md). The validation split is the ordinary Shakespeare one (nothing repeated), so the Heads
tab measures its roles on real text; its induction view shows the loss drop on a repeated random sequence.
Fixed seeds: the losses come out the same on any CPU; only the time differs."""
import sys

import torch

from model_core.analysis.probes import induction_probe
from model_core.data.corpora import load_corpus
from model_core.data.dataset import compact, token_tensor, train_val_split
from model_core.data.tokenization import build_tokenizer
from model_core.make_assets import one_asset_main
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from model_core.training.train_config import TrainConfig
from model_core.training.trainer import Trainer

NAME = "induction"
CORPUS = "shakespeare"
PROBE_TEXT = "First Citizen:\nBefore we proceed any further, hear me speak."
MODEL = dict(block_size=64, d_model=96, n_heads=4, n_layers=2, attn_only=True)
TRAIN = dict(max_steps=2000, batch_size=32, lr=5e-3, min_lr=2e-4, warmup_steps=50, eval_interval=200,
             eval_iters=10, snapshot_interval=150, seed=1337, device="cpu", probe_text=PROBE_TEXT)
SEGMENT_LENGTHS = (6, 24)  # shortest and longest repeated passage, in tokens
COPIES = 3  # times each passage is shown in a row


def with_repeats(ids: torch.Tensor, seed: int) -> torch.Tensor:
    """The token stream cut into passages of random length, each shown COPIES times in a row."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(SEGMENT_LENGTHS[0], SEGMENT_LENGTHS[1] + 1, (len(ids) // SEGMENT_LENGTHS[0] + 1,),
                            generator=g)
    parts, start = [], 0
    for n in lengths.tolist():
        if start >= len(ids):
            break
        passage = ids[start: start + n]
        parts += [passage] * COPIES
        start += n
    return torch.cat(parts)


def train(steps=None, log=print) -> Trainer:
    text = load_corpus(CORPUS)
    tokenizer = build_tokenizer("char", text)
    train_ids, val_ids = train_val_split(token_tensor(tokenizer.encode(text)))
    cfg = TrainConfig(**{**TRAIN, **({"max_steps": steps} if steps else {})})
    torch.manual_seed(cfg.seed)  # model initialisation
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, **MODEL))
    repeated = compact(with_repeats(train_ids, cfg.seed), tokenizer.vocab_size)
    trainer = Trainer(model, repeated, compact(val_ids, tokenizer.vocab_size), cfg, tokenizer)

    def report(metrics):
        if "snapshot" in metrics:
            snap = metrics["snapshot"]
            best = float(snap.head_stats["induction"].max()) if "induction" in snap.head_stats else float("nan")
            log(f"{NAME} step {snap.step}/{cfg.max_steps}: val {snap.val_loss} best induction score {best:.2f} "
                f"({trainer.elapsed:.0f} s)")

    trainer.run(callback=report)
    return trainer


def induction_numbers(trainer: Trainer) -> dict:
    scores = induction_probe(trainer.model.eval()).scores["induction"]
    return {"val_loss": round(trainer.evals[-1]["val_loss"], 4), "best_induction": round(float(scores.max()), 3)}


def main(argv=None) -> int:
    return one_asset_main(argv, "python -m model_core.make_induction_asset", __doc__, NAME, CORPUS, train,
                          induction_numbers)


if __name__ == "__main__":
    sys.exit(main())
