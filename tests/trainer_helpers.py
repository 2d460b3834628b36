"""A tiny trainer on a repetitive text, for the optimiser, precision and multi-process tests."""
import torch

from model_core import GPT, GPTConfig
from model_core.data.dataset import token_tensor, train_val_split
from model_core.data.tokenization import build_tokenizer
from model_core.training.train_config import TrainConfig
from model_core.training.trainer import Trainer

TEXT = "the cat sat on the mat. the dog sat on the log. " * 40


def tiny_trainer(seed: int = 0, model: dict = None, init_seed: int = None, **train) -> Trainer:
    """seed: batches (and, unless init_seed is given, the model's initial weights)."""
    tok = build_tokenizer("char", TEXT)
    train_data, val_data = train_val_split(token_tensor(tok.encode(TEXT)))
    torch.manual_seed(seed if init_seed is None else init_seed)
    arch = dict(vocab_size=tok.vocab_size, block_size=16, d_model=32, n_heads=2, n_layers=1)
    gpt = GPT(GPTConfig(**{**arch, **(model or {})}))
    cfg = dict(max_steps=40, batch_size=8, lr=1e-2, warmup_steps=5, eval_interval=0, eval_iters=2,
               snapshot_interval=0, seed=seed, device="cpu")
    return Trainer(gpt, train_data, val_data, TrainConfig(**{**cfg, **train}), tok)
