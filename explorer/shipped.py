"""The demo models that ship in assets/models/, and a fallback when they are missing."""
import copy
import functools
from pathlib import Path

import torch

from model_core import GPT
from model_core.checkpoint import Checkpoint, load_checkpoint
from model_core.corpora import load_corpus
from model_core.presets import get_preset
from model_core.tokenization import build_tokenizer

MODELS_DIR = Path(__file__).resolve().parent.parent / "assets" / "models"
DEFAULT_MODEL = "shakespeare"


def shipped_models() -> list[str]:
    """Names of the checkpoints in assets/models/, default first."""
    names = sorted(p.name for p in MODELS_DIR.iterdir() if (p / "config.json").exists()) if MODELS_DIR.exists() else []
    return sorted(names, key=lambda n: n != DEFAULT_MODEL)


def load_shipped(name: str) -> Checkpoint:
    """A shipped checkpoint with a model of its own (hooks are per model object), sharing the read-only
    history and snapshots with every other session that opened it; an untrained classroom model on
    Shakespeare if the assets are missing."""
    template = _loaded(name)
    return Checkpoint(copy.deepcopy(template.model), template.tokenizer, template.train_config, template.history,
                      template.evals, template.snapshots, template.corpus, template.versions)


def shipped_template(name: str) -> Checkpoint:
    """The shipped checkpoint every session shares, its model included: read-only (explorer.session copies
    the model before a session uses it)."""
    return _loaded(name)


@functools.lru_cache(maxsize=8)
def _loaded(name: str) -> Checkpoint:
    if name in shipped_models():
        return load_checkpoint(MODELS_DIR / name)
    if name != DEFAULT_MODEL:
        raise ValueError(f"no shipped model named {name!r}; choose one of: {', '.join(shipped_models()) or 'none'}.")
    return untrained_default()


def untrained_default() -> Checkpoint:
    tokenizer = build_tokenizer("char", load_corpus("shakespeare"))
    torch.manual_seed(0)
    model = GPT(get_preset("classroom").model_config(tokenizer.vocab_size)).eval()
    return Checkpoint(model, tokenizer, corpus="shakespeare (untrained: run `make assets`)")
