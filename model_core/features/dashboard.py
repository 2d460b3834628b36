"""What each feature of an SAE does on a text, in one pass (the Features tab reads this, Neuronpedia-style):
how often it fires (density), a histogram of its activations, its top activating places, and the FFN neurons
whose activations follow it most closely (their correlation over the text: a polysemantic neuron is one that
several unrelated features share).

Kept in the SAE's folder as feature_stats.safetensors (SAELens ignores the file), with the token ids of the text
it was computed on, so that a shipped SAE shows its examples without its corpus or a pass of the model."""
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

from model_core.analysis.top_examples import merge_top
from model_core.features.activations import activations_at_hooks, hook_layer, windows_of

STATS_FILE = "feature_stats.safetensors"
TOP_K = 12  # top activating places kept per feature
HIST_BINS = 24  # activation histogram bins per feature, from 0 to its largest activation
NEURONS_KEPT = 8  # neurons kept per feature (and features per neuron), by correlation
BATCH_TOKENS = 8_192


@dataclass
class FeatureStats:
    text_ids: np.ndarray  # [N] int32 token ids of the text (positions below index it)
    window: int  # each position saw the context of its own window of this many tokens
    density: np.ndarray  # [d_sae] share of positions where the feature is active
    top_values: np.ndarray  # [d_sae, K] largest activations, largest first (0 where fewer fired)
    top_positions: np.ndarray  # [d_sae, K] int32 their positions in text_ids
    hist_counts: np.ndarray  # [d_sae, HIST_BINS] int32, active positions binned from 0 to top_values[:, 0]
    neuron_index: np.ndarray  # [d_sae, NEURONS_KEPT] int32 FFN neurons most correlated with the feature
    neuron_corr: np.ndarray  # [d_sae, NEURONS_KEPT] their correlations
    feature_index: np.ndarray  # [d_mlp, NEURONS_KEPT] int32 features most correlated with each neuron
    feature_corr: np.ndarray  # [d_mlp, NEURONS_KEPT]
    neuron_layer: int  # whose neurons (blocks.L.mlp.hook_post); -1 for an attention-only model

    @property
    def n_tokens(self) -> int:
        return len(self.text_ids)

    def save(self, folder, name: str = STATS_FILE) -> Path:
        arrays = {name: np.ascontiguousarray(getattr(self, name)) for name in self.__dataclass_fields__
                  if isinstance(getattr(self, name), np.ndarray)}
        path = Path(folder) / name
        save_file(arrays, str(path), metadata={"window": str(self.window), "neuron_layer": str(self.neuron_layer)})
        return path


def load_stats(folder, name: str = STATS_FILE) -> Optional[FeatureStats]:
    """The stats kept beside an SAE (or a transcoder's layer), or None when there are none (they are then computed
    on demand)."""
    path = Path(folder) / name
    if not path.is_file():
        return None
    from safetensors import safe_open
    with safe_open(str(path), "np") as f:
        meta = f.metadata() or {}
    arrays = load_file(str(path))
    return FeatureStats(**arrays, window=int(meta.get("window", 0)), neuron_layer=int(meta.get("neuron_layer", -1)))


class _Correlation:
    """Running sums for the correlation of every feature with every neuron over the positions seen."""

    def __init__(self, d_sae: int, d_mlp: int):
        self.n, self.fx, self.fxx = 0, torch.zeros(d_sae, dtype=torch.float64), torch.zeros(d_sae, dtype=torch.float64)
        self.nx, self.nxx = torch.zeros(d_mlp, dtype=torch.float64), torch.zeros(d_mlp, dtype=torch.float64)
        self.cross = torch.zeros(d_sae, d_mlp, dtype=torch.float64)

    def add(self, acts: torch.Tensor, neurons: torch.Tensor) -> None:
        self.n += len(acts)
        self.fx += acts.sum(0).double()
        self.fxx += acts.pow(2).sum(0).double()
        self.nx += neurons.sum(0).double()
        self.nxx += neurons.pow(2).sum(0).double()
        self.cross += (acts.T @ neurons).double()  # [d_sae, d_mlp]

    def matrix(self) -> torch.Tensor:
        n = max(self.n, 1)
        cov = self.cross / n - torch.outer(self.fx / n, self.nx / n)
        std_f = (self.fxx / n - (self.fx / n) ** 2).clamp_min(0).sqrt()
        std_n = (self.nxx / n - (self.nx / n) ** 2).clamp_min(0).sqrt()
        return (cov / torch.outer(std_f, std_n).clamp_min(1e-12)).float()


@torch.inference_mode()
def feature_stats(model, sae, ids: torch.Tensor, window: int, batch_tokens: int = BATCH_TOKENS,
                  progress: Optional[Callable[[float], None]] = None) -> FeatureStats:
    """One pass of model and sae over ids (a 1-D token split) in consecutive windows of `window` tokens."""
    windows = windows_of(ids, window)
    d_sae, layer = sae.cfg.d_sae, hook_layer(sae.cfg.hook_name)
    has_ffn = not model.cfg.attn_only
    neuron_hook = f"blocks.{layer}.mlp.hook_post"
    corr = _Correlation(d_sae, model.cfg.d_mlp) if has_ffn else None
    top = (torch.zeros(0, d_sae), torch.zeros(0, d_sae, dtype=torch.long))
    nonzero_features, nonzero_values, fires = [], [], torch.zeros(d_sae, dtype=torch.long)
    per_pass = max(1, batch_tokens // window)
    for first in range(0, len(windows), per_pass):
        batch = windows[first:first + per_pass]
        x, neurons = _activations(model, batch, sae.cfg.hook_name, neuron_hook if has_ffn else None)
        acts = sae.encode(x)  # [n, d_sae]
        positions = first * window + torch.arange(len(acts))
        k = min(TOP_K, len(acts))
        best = acts.topk(k, dim=0)
        top = merge_top(*top, best.values, positions[best.indices], TOP_K)
        active = acts > 0
        fires += active.sum(0)
        rows, cols = active.nonzero(as_tuple=True)
        nonzero_features.append(cols.int())
        nonzero_values.append(acts[rows, cols])
        if corr is not None:
            corr.add(acts, neurons)
        if progress is not None:
            progress(min(1.0, (first + len(batch)) / len(windows)))
    n = len(windows) * window
    values, positions = top[0].T.numpy(), top[1].T.numpy().astype(np.int32)  # [d_sae, K]
    hist = _histograms(torch.cat(nonzero_features).numpy(), torch.cat(nonzero_values).numpy(), values[:, 0], d_sae)
    neuron_index, neuron_corr, feature_index, feature_corr = _strongest(corr, d_sae)
    return FeatureStats(ids[:n].numpy().astype(np.int32), window, (fires.double() / n).numpy().astype(np.float32),
                        values.astype(np.float32), positions, hist, neuron_index, neuron_corr, feature_index,
                        feature_corr, layer if has_ffn else -1)


def _activations(model, batch: torch.Tensor, hook: str, neuron_hook: Optional[str]):
    """(activation at hook [n, width], neuron activations [n, d_mlp] or None) for windows batch [b, T]."""
    found = activations_at_hooks(model, batch, [hook] + ([neuron_hook] if neuron_hook else []))
    flat = {name: t.reshape(-1, t.shape[-1]) for name, t in found.items()}
    return flat[hook], flat.get(neuron_hook)


def _histograms(features: np.ndarray, values: np.ndarray, maxima: np.ndarray, d_sae: int) -> np.ndarray:
    """[d_sae, HIST_BINS] counts of each feature's nonzero activations from 0 to its maximum."""
    scale = np.where(maxima[features] > 0, maxima[features], 1.0)
    bins = np.minimum((values / scale * HIST_BINS).astype(np.int64), HIST_BINS - 1)
    return np.bincount(features.astype(np.int64) * HIST_BINS + bins, minlength=d_sae * HIST_BINS) \
        .reshape(d_sae, HIST_BINS).astype(np.int32)


def _strongest(corr: Optional[_Correlation], d_sae: int):
    """Per feature its most correlated neurons, per neuron its most correlated features (index, corr)."""
    if corr is None:
        empty = np.zeros((d_sae, 0), dtype=np.int32)
        return empty, empty.astype(np.float32), np.zeros((0, 0), dtype=np.int32), np.zeros((0, 0), dtype=np.float32)
    matrix = corr.matrix()  # [d_sae, d_mlp]
    by_feature = matrix.topk(min(NEURONS_KEPT, matrix.shape[1]), dim=1)
    by_neuron = matrix.T.topk(min(NEURONS_KEPT, matrix.shape[0]), dim=1)
    return (by_feature.indices.int().numpy(), by_feature.values.numpy(), by_neuron.indices.int().numpy(),
            by_neuron.values.numpy())
