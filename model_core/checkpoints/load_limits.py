"""Caps on what a loaded checkpoint may ask for, checked before any weight is allocated.

A config.json of 300 bytes (or a nanoGPT ckpt.pt of 1 kB, or a GGUF file's metadata) can describe a model of
hundreds of GB, or one whose attention maps for a single prompt take gigabytes. So every loader (our
checkpoints, nanoGPT, Hugging Face folders, GGUF files) asks check_model_size first: the numbers in the config
against these caps, then the parameters counted on PyTorch's meta device (shapes only, no memory). Only then
does it read the weights, and it builds the model with model_from_tensors, which asks again."""
import math
from dataclasses import dataclass
from typing import Mapping, Optional

import torch

from model_core.checkpoints.convert_error import ConvertError
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT

MODEL_SIZE_FIELDS = ("vocab_size", "block_size", "d_model", "n_heads", "n_layers", "d_mlp")


@dataclass(frozen=True)
class LoadLimits:
    max_params: int = 5_000_000  # parameters (the app's --max-params default): 20 MB of float32 weights
    max_block_size: int = 512  # context length; twice the Train tab's largest, a prompt's cost grows with its square
    max_vocab_size: int = 65_536  # tokens in the vocabulary
    max_layers: int = 24  # transformer blocks
    max_heads: int = 64  # attention heads per layer
    max_d_model: int = 4096  # width of the residual stream
    max_d_mlp: int = 16_384  # FFN hidden width (4 x max_d_model)
    # layers x heads x block_size^2: one prompt's attention scores and pattern are 8 bytes per cell, so
    # 2^23 cells is ~67 MB; the Train tab's largest model (8 x 8 x 256^2) needs half of that.
    max_attention_cells: int = 1 << 23
    max_bytes: int = 64_000_000  # all checkpoint files together, uncompressed
    max_json_bytes: int = 16_000_000  # config.json or snapshots.json alone (JSON grows ~10x once parsed)
    max_history_rows: int = 100_000  # per-step metrics rows (history) and evaluations (evals)
    max_snapshots: int = 2_000  # training snapshots in snapshots.json
    # what the tokenizer, history, evaluations and snapshots may keep in memory once parsed (Python objects
    # are ~5x their JSON); None: not checked (files on this machine)
    max_record_bytes: Optional[int] = 48_000_000

    def cap(self, field: str) -> int:
        """The cap on one GPTConfig size field."""
        return {"vocab_size": self.max_vocab_size, "block_size": self.max_block_size,
                "d_model": self.max_d_model, "n_heads": self.max_heads, "n_layers": self.max_layers,
                "d_mlp": self.max_d_mlp}[field]


UPLOAD_LIMITS = LoadLimits()  # for files from someone else: an upload, a download
# Files on this machine (shipped models, the CLI's own runs): caps only guard against a damaged config;
# sized for the largest preset (8 x 512, ~25M parameters) with room to spare.
LOCAL_LIMITS = LoadLimits(max_params=200_000_000, max_block_size=8192, max_layers=96, max_heads=128,
                          max_d_model=8192, max_d_mlp=32_768, max_attention_cells=1 << 30,
                          max_bytes=2_000_000_000, max_json_bytes=256_000_000, max_history_rows=10_000_000,
                          max_snapshots=100_000, max_record_bytes=None)


def check_size_fields(model_config: dict, limits: LoadLimits) -> None:
    """ValueError if a size field in a raw model_config dict (types already checked) is over its cap."""
    for name in MODEL_SIZE_FIELDS:
        value = model_config.get(name)
        if isinstance(value, int) and value > limits.cap(name):
            raise ValueError(f"model_config.{name} is {value:,}, more than this app's limit of "
                             f"{limits.cap(name):,}: train a smaller model and save it again.")


def check_model_size(cfg: GPTConfig, limits: LoadLimits) -> GPT:
    """The model cfg describes, built on the meta device (shapes only); ValueError if it is over a cap."""
    check_size_fields(cfg.to_dict(), limits)  # d_mlp may have been filled in from d_model
    cells = cfg.n_layers * cfg.n_heads * cfg.block_size ** 2
    if cells > limits.max_attention_cells:
        raise ValueError(
            f"the model has {cfg.n_layers} layers x {cfg.n_heads} heads over a {cfg.block_size}-token context: "
            f"its attention maps for one prompt ({cells:,} values) exceed this app's limit of "
            f"{limits.max_attention_cells:,}; use fewer heads or layers, or a shorter context.")
    with torch.device("meta"):
        model = GPT(cfg)
    n = model.num_params()
    if n > limits.max_params:
        raise ValueError(f"the model has {n:,} parameters, more than this app's limit of {limits.max_params:,}: "
                         "train a smaller model and save it again.")
    return model


def bounded(cfg: GPTConfig, limits: LoadLimits, context_flag: bool = False) -> GPT:
    """check_model_size for a model converted from another program's files: ConvertError saying it is too large
    for this app; context_flag: the converter can shorten the context (--block-size), and the message says
    which context would fit when the attention maps are what is too large."""
    try:
        return check_model_size(cfg, limits)
    except ValueError as err:
        message = str(err).replace("train a smaller model and save it again", "it is too large for this app")
        message = message.replace("model_config.", "the model's ")
        cells = cfg.n_layers * cfg.n_heads
        if context_flag and "attention maps" in message and cells <= limits.max_attention_cells:
            fits = math.isqrt(limits.max_attention_cells // cells)
            message += f" A context of up to {fits} tokens fits: pass block_size (--block-size {fits})."
        raise ConvertError(message) from None


def model_from_tensors(cfg: GPTConfig, tensors: Mapping[str, torch.Tensor], limits: LoadLimits) -> GPT:
    """The model cfg describes, in eval mode, holding the given tensors (by our names): the one way a loader
    builds a model from a file. Its size is checked first (check_model_size, the meta device); nothing is
    initialised that the tensors replace."""
    check_model_size(cfg, limits)
    return GPT.with_weights(cfg, dict(tensors))


def expected_tensors(model: GPT) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """{name: (shape, dtype)} of the state dict a checkpoint of model must hold (a tied unembed is saved once)."""
    state = model.state_dict()
    if model.cfg.tie_weights:
        state.pop("unembed.weight", None)
    return {name: (tuple(t.shape), t.dtype) for name, t in state.items()}
