"""Models of their own for the classroom's analysers: a shipped model with seeded noise on its weights, saved as
one .zip checkpoint per session (as the app's "Save inspected model as .zip" would), so that no two sessions,
and no session and the shipped model, ever share an answer (the server shares results only between sessions
on an unmodified shipped model)."""
import copy
from dataclasses import replace
from pathlib import Path

import torch

from bench.classroom_checks import ASSETS
from model_core.checkpoints.checkpoint import Checkpoint, load_checkpoint, save_checkpoint_zip


@torch.no_grad()
def perturbed(ckpt: Checkpoint, seed: int, noise: float) -> Checkpoint:
    """A copy of ckpt whose every weight tensor has Gaussian noise of std noise × the tensor's std added (seeded)."""
    model = copy.deepcopy(ckpt.model)
    generator = torch.Generator().manual_seed(seed)
    for param in model.parameters():  # a tied unembedding is one Parameter, so it gets the embedding's noise
        spread = param.std().item() if param.numel() > 1 else abs(param.item())
        param.add_(torch.randn(param.shape, generator=generator) * (noise * spread))
    return replace(ckpt, model=model, corpus=f"{ckpt.corpus or 'shipped model'}, weights perturbed (seed {seed})")


def own_model_zips(base: str, count: int, folder: Path, seed: int, noise: float) -> list[Path]:
    """count checkpoints of the shipped model base, each perturbed with its own seed, as folder/base-own-K.zip."""
    ckpt = load_checkpoint(ASSETS / base)
    return [save_checkpoint_zip(perturbed(ckpt, seed * 100_003 + k, noise), Path(folder) / f"{base}-own-{k}.zip")
            for k in range(count)]
