"""The nanoGPT CPU recipe against our presets in the same wall time, on the same data and evaluation.

reference: bench.reference_gpt.PlainGPT, 4 layers x 4 heads x 128, block 64, batch 12, AdamW lr 1e-3
(warmup 100, cosine to 1e-4 at 2000), weight decay 0.1 on matrices, clip 1.0, dropout 0, 2000 iterations:
nanoGPT's `train_shakespeare_char.py` CPU command line. Its training wall time W is then the budget of
each contender. Both are scored by val_loss(): the same FINAL_EVAL_ITERS seeded batches of the same split."""
import math
import time
from dataclasses import dataclass

import torch

from bench.reference_gpt import PlainGPT
from model_core.data.corpora import load_corpus
from model_core.data.dataset import get_batch, token_tensor, train_val_split
from model_core.data.tokenization import build_tokenizer
from model_core.model.gpt import GPT
from model_core.training.presets import get_preset
from model_core.training.trainer import Trainer

BLOCK = 64  # both sides see 64-token windows
FINAL_EVAL_ITERS, EVAL_BATCH, EVAL_SEED = 50, 32, 4242  # 50 x 32 windows of the validation split
REFERENCE = dict(n_layers=4, n_heads=4, d_model=128, batch_size=12, lr=1e-3, min_lr=1e-4, warmup=100,
                 iters=2000, weight_decay=0.1, betas=(0.9, 0.99), grad_clip=1.0)


@dataclass
class Result:
    name: str
    steps: int
    train_seconds: float
    val_loss: float


def shakespeare_splits():
    """Our char tokenizer and our 90/10 split of the built-in corpus."""
    text = load_corpus("shakespeare")
    tokenizer = build_tokenizer("char", text)
    return tokenizer, *train_val_split(token_tensor(tokenizer.encode(text)))


@torch.inference_mode()
def val_loss(model, val_data: torch.Tensor) -> float:
    """Mean loss over the fixed evaluation batches; model(x, y) -> (logits, loss), eval mode, fp32."""
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(EVAL_SEED)
    total = 0.0
    for _ in range(FINAL_EVAL_ITERS):
        x, y = get_batch(val_data, BLOCK, EVAL_BATCH, generator)
        total += model(x, y)[1].item()
    model.train(was_training)
    return total / FINAL_EVAL_ITERS


def reference_lr(it: int) -> float:
    r = REFERENCE
    if it < r["warmup"]:
        return r["lr"] * (it + 1) / (r["warmup"] + 1)
    ratio = (it - r["warmup"]) / (r["iters"] - r["warmup"])
    return r["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (r["lr"] - r["min_lr"])


def reference_optimizer(model) -> torch.optim.AdamW:
    """nanoGPT's configure_optimizers: decay every parameter with 2+ dimensions (embeddings too)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": REFERENCE["weight_decay"]},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=REFERENCE["lr"], betas=REFERENCE["betas"])


def reference_stepper(splits, seed: int = 1337):
    """-> (the recipe's model, step(it): one training iteration at iteration it's learning rate)."""
    tokenizer, train_data, _ = splits
    r = REFERENCE
    torch.manual_seed(seed)
    model = PlainGPT(tokenizer.vocab_size, BLOCK, r["d_model"], r["n_heads"], r["n_layers"]).train()
    optimizer, generator = reference_optimizer(model), torch.Generator().manual_seed(seed)

    def step(it: int) -> None:
        for group in optimizer.param_groups:
            group["lr"] = reference_lr(it)
        x, y = get_batch(train_data, BLOCK, r["batch_size"], generator)
        _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), r["grad_clip"])
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return model, step


def reference_run(splits, seed: int = 1337) -> Result:
    """Train the nanoGPT recipe for its 2000 iterations; train_seconds is W."""
    started = time.perf_counter()
    model, step = reference_stepper(splits, seed)
    for it in range(REFERENCE["iters"]):
        step(it)
    seconds = time.perf_counter() - started
    return Result("nanoGPT CPU recipe (reference)", REFERENCE["iters"], seconds, val_loss(model, splits[2]))


def preset_trainer(splits, preset_name: str, model: dict = None, train: dict = None,
                   max_steps: int = 1_000_000) -> Trainer:
    """A Trainer for a preset with overrides, block size 64, no evaluations or snapshots along the way (the
    reference has none either); the cosine ends at max_steps unless run() gets a time limit."""
    tokenizer, train_data, val_data = splits
    preset = get_preset(preset_name)
    cfg = preset.train_config(**{**dict(device="cpu", max_steps=max_steps, eval_interval=0,
                                        snapshot_interval=0), **(train or {})})
    torch.manual_seed(cfg.seed)
    model_cfg = preset.model_config(tokenizer.vocab_size, **{**(model or {}), "block_size": BLOCK})
    return Trainer(GPT(model_cfg), train_data, val_data, cfg, tokenizer)


def preset_run(splits, preset_name: str, seconds: float, label: str = "", model: dict = None,
               train: dict = None) -> Result:
    """Train a preset (with overrides) for `seconds` of wall time, model construction included; the clock,
    not max_steps, ends the run and the cosine."""
    started = time.perf_counter()
    trainer = preset_trainer(splits, preset_name, model, train)
    trainer.run(max_seconds=seconds - (time.perf_counter() - started))
    elapsed = time.perf_counter() - started
    return Result(label or preset_name, trainer.step_count, elapsed, val_loss(trainer.model, splits[2]))


# --ablation: the classroom (fast) preset with one choice undone or moved at a time (same budget W each).
ABLATIONS = [
    ("classroom (all)", {}, {}),
    ("  learned positions instead of rope", dict(positional="learned"), {}),
    ("  qk-norm added", dict(qk_norm=True), {}),
    ("  relu2 instead of gelu", dict(activation="relu2"), {}),
    ("  adamw instead of muon", {}, dict(optimizer="adamw")),
    ("  4 layers instead of 3", dict(n_layers=4), {}),
    ("  FFN 512 (4 x d_model) instead of 256", dict(d_mlp=512), {}),
    ("  3 Newton-Schulz steps instead of 5", {}, dict(muon_ns_steps=3)),
    ("  muon_lr / 2", {}, "muon_lr/2"),
    ("  muon_lr x 2", {}, "muon_lr*2"),
    ("  lr / 2 (AdamW groups)", {}, "lr/2"),
    ("  batch 16", {}, dict(batch_size=16)),
    ("  batch 64", {}, dict(batch_size=64)),
]


def ablation_train(change, preset_train: dict) -> dict:
    """Train overrides of one ablation row; 'muon_lr/2'-style strings scale the preset's value."""
    if isinstance(change, dict):
        return change
    name, op, factor = change[:-2], change[-2], float(change[-1])
    return {name: preset_train[name] * factor if op == "*" else preset_train[name] / factor}


def ablation_rows(splits, seconds: float, reference: Result, preset_name: str = "classroom") -> list:
    rows = []
    preset_train = get_preset(preset_name).train
    for label, model, change in ABLATIONS:
        r = preset_run(splits, preset_name, seconds, label, model, ablation_train(change, preset_train))
        rows.append(result_row(r, reference))
    r = preset_run(splits, "gpt2-classic", seconds, "gpt2-classic (all undone)")
    rows.append(result_row(r, reference))
    return rows


def result_row(r: Result, reference: Result) -> list:
    delta = "" if r is reference else f"{r.val_loss - reference.val_loss:+.3f}"
    return [r.name, r.steps, f"{r.train_seconds:.1f}", f"{r.val_loss:.3f}", delta]
