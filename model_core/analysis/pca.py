"""PCA (scikit-learn) of embeddings and hidden states, for 2-D and 3-D scatter plots."""
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from model_core.model.cache import ActivationCache


@dataclass
class PCAResult:
    coords: np.ndarray  # [N, k] projected points
    explained_variance_ratio: np.ndarray  # [k] share of the variance each component explains
    positions: np.ndarray  # [N] position (or row index) of each point, for colouring


def embedding_pca(matrix: np.ndarray, n_components: int = 2, solver: str = "full") -> PCAResult:
    """Project the rows of matrix [N, D] onto their top principal components (solver: scikit-learn's; a
    seeded "randomized" is 10x faster on thousands of rows)."""
    x = np.asarray(matrix, dtype=np.float64)
    if n_components not in (2, 3):
        raise ValueError(f"n_components must be 2 or 3, got {n_components}.")
    k = min(n_components, x.shape[0], x.shape[1])
    if x.shape[0] < 2 or k < 1:
        raise ValueError(f"PCA needs at least 2 points, got {x.shape[0]}.")
    from sklearn.decomposition import PCA  # 1-2 s to import: only the views that draw a scatter pay it

    pca = PCA(n_components=k, svd_solver=solver, random_state=0).fit(x)
    coords = np.zeros((x.shape[0], n_components), dtype=np.float32)
    coords[:, :k] = pca.transform(x)
    ratio = np.zeros(n_components, dtype=np.float32)
    ratio[:k] = np.nan_to_num(pca.explained_variance_ratio_)
    return PCAResult(coords, ratio, np.arange(x.shape[0]))


@torch.no_grad()
def token_embedding_pca(model, n_components: int = 2, rows: Optional[int] = None) -> PCAResult:
    """Every row of the token embedding matrix (one point per vocabulary entry), or its first `rows` rows."""
    matrix = model.embed.weight[:rows].detach().cpu().numpy()
    return embedding_pca(matrix, n_components, "full" if rows is None else "randomized")


@torch.no_grad()
def positional_pca(model, n_components: int = 2) -> PCAResult:
    """One point per position 0..block_size-1."""
    table = model.position_embeddings(model.cfg.block_size).detach().cpu().numpy()
    return embedding_pca(table, n_components)


@torch.no_grad()
def token_plus_position_pca(model, ids: list[int], n_components: int = 2) -> PCAResult:
    """The prompt's first residual stream: token vector + position vector at each position."""
    idx = torch.tensor(ids, dtype=torch.long, device=model.embed.weight.device)
    x = model.embed(idx) + model.position_embeddings(len(ids))  # (T, D)
    return embedding_pca(x.cpu().numpy(), n_components)


def hidden_state_pca(cache: ActivationCache, layer: int, n_components: int = 2) -> PCAResult:
    """Hidden state after `layer` blocks (0 = embeddings) at each position of the prompt."""
    name = "blocks.0.hook_resid_pre" if layer == 0 else f"blocks.{layer - 1}.hook_resid_post"
    return embedding_pca(cache[name][0].float().numpy(), n_components)
