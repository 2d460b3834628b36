"""Modular addition in the Fourier basis (Nanda et al. 2023): a model that groks a + b mod p embeds each number
as cosines and sines of a few key frequencies w_k = 2πk/p and reads the answer off cos(w_k(a + b - c)).

The basis over the p residues: the constant 1/√p, then for k = 1..(p-1)/2 the pair √(2/p)·cos(w_k x),
√(2/p)·sin(w_k x) (for an even p the last frequency p/2 has only its cosine). Its rows are orthonormal, so a
vector's squared norm splits exactly into one part per frequency."""
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

KEY_SHARE = 0.9  # key frequencies: the fewest that carry this share of what is measured
MAX_KEY_FREQUENCIES = 10


def fourier_basis(p: int) -> tuple[np.ndarray, list[str]]:
    """(basis [p, p] with orthonormal rows, row labels "const", "cos 1", "sin 1", ...). float64"""
    x = np.arange(p)
    rows, labels = [np.full(p, 1 / np.sqrt(p))], ["const"]
    for k in range(1, p // 2 + 1):
        w = 2 * np.pi * k / p
        if 2 * k == p:  # Nyquist: the sine is zero at every residue
            rows.append(np.cos(w * x) / np.sqrt(p))
            labels.append(f"cos {k}")
            continue
        rows += [np.cos(w * x) * np.sqrt(2 / p), np.sin(w * x) * np.sqrt(2 / p)]
        labels += [f"cos {k}", f"sin {k}"]
    return np.stack(rows), labels


def frequency_of_rows(p: int) -> np.ndarray:
    """The frequency k of each basis row (0 for the constant). [p] int"""
    return np.array([0] + [k for k in range(1, p // 2 + 1) for _ in range(1 if 2 * k == p else 2)])


def frequency_norms(matrix: np.ndarray) -> np.ndarray:
    """matrix [p, ...] indexed by a residue -> the norm of its part at each frequency 0..p//2 (0: the constant).
    The squares add up to the squared norm of the matrix. [p//2 + 1] float64"""
    matrix = np.asarray(matrix, dtype=np.float64).reshape(len(matrix), -1)
    p = len(matrix)
    basis, _ = fourier_basis(p)
    energy = ((basis @ matrix) ** 2).sum(1)  # [p] per basis row
    return np.sqrt(np.bincount(frequency_of_rows(p), weights=energy, minlength=p // 2 + 1))


def top_share(norms: np.ndarray, n: int) -> float:
    """Share of the squared norm (constant excluded) carried by the n largest frequencies."""
    energy = np.asarray(norms[1:], dtype=np.float64) ** 2
    total = energy.sum()
    return float(np.sort(energy)[::-1][:n].sum() / total) if total > 0 else 0.0


def fewest_carrying(norms: np.ndarray, share: float = KEY_SHARE) -> list[int]:
    """The fewest frequencies (1..) whose squared norms carry `share` of the total (constant excluded), largest
    first."""
    energy = np.asarray(norms[1:], dtype=np.float64) ** 2
    order = np.argsort(-energy)
    cumulative = np.cumsum(energy[order]) / max(energy.sum(), 1e-30)
    return [int(k) + 1 for k in order[: int(np.searchsorted(cumulative, share)) + 1]]


@torch.no_grad()
def key_frequencies(norms: np.ndarray) -> list[int]:
    """The fewest frequencies carrying KEY_SHARE of an embedding's squared Fourier norm, at most MAX_KEY_FREQUENCIES:
    the lab's red bars and what the restricted and excluded losses keep or remove."""
    return fewest_carrying(norms)[:MAX_KEY_FREQUENCIES]


def embedding_norms(model, p: int) -> np.ndarray:
    """Norm of the number tokens' embedding (tokens 0..p-1, [p, d_model]) at each frequency. [p//2 + 1]"""
    return frequency_norms(model.embed.weight.detach()[:p].double().cpu().numpy())


@torch.no_grad()
def all_pair_run(model, p: int, hooks: tuple = ()) -> tuple[torch.Tensor, dict]:
    """The model on every prompt "a b =" (a-major): logits at "=" [p², vocab] float64 and the cached activations
    at "=" of the hook points named (e.g. "blocks.0.mlp.hook_post" -> [p², d_mlp])."""
    a = torch.arange(p).repeat_interleave(p)
    b = torch.arange(p).repeat(p)
    ids = torch.stack([a, b, torch.full_like(a, p)], dim=1).to(next(model.parameters()).device)  # (p², 3)
    logits, cache = model.run_with_cache(ids, names_filter=lambda n: n in hooks)
    return logits[:, -1].double().cpu(), {name: cache[name][:, -1].double() for name in hooks}


def sum_directions(p: int, frequencies) -> torch.Tensor:
    """Unit vectors over the p² pairs (a-major) along cos(w_k(a + b)) and sin(w_k(a + b)). [2 * len, p²]"""
    s = (torch.arange(p).repeat_interleave(p) + torch.arange(p).repeat(p)).double()  # a + b
    rows = []
    for k in frequencies:
        w = 2 * np.pi * k / p
        for v in (torch.cos(w * s), torch.sin(w * s)):
            if v.norm() > 1e-9:
                rows.append(v / v.norm())
    return torch.stack(rows) if rows else torch.zeros(0, p * p, dtype=torch.float64)


def sum_frequency_norms(logits: torch.Tensor, p: int) -> np.ndarray:
    """How much of the logits [p², vocab] (mean over pairs removed) lies along cos/sin(w_k(a + b)), per
    frequency k = 0..p//2 (0: nothing; the mean). [p//2 + 1]"""
    s = (torch.arange(p).repeat_interleave(p) + torch.arange(p).repeat(p)) % p  # a + b mod p, a-major
    by_sum = torch.zeros(p, logits.shape[1], dtype=torch.float64).index_add_(0, s, logits.double())  # [p, V]
    # cos(w(a + b)) depends on (a + b) mod p alone: its projection is the p-point transform of the sums above,
    # and each of its p² entries appears p times, so a unit direction over the pairs is the basis row / √p
    norms = frequency_norms(by_sum.numpy()) / np.sqrt(p)
    norms[0] = 0.0
    return norms


@dataclass
class PhaseLosses:
    key_frequencies: list  # the frequencies the two losses keep or remove
    restricted: float  # loss on all pairs with only the key frequencies' cos/sin(w(a + b)) parts of the logits
    excluded: float  # loss on the training pairs with those parts removed


def phase_losses(logits: torch.Tensor, p: int, train_mask: torch.Tensor,
                 frequencies: Optional[list] = None) -> PhaseLosses:
    """Nanda et al.'s restricted and excluded losses from the logits on every pair [p², vocab] (a-major).
    frequencies: the key frequencies (default: the fewest that carry KEY_SHARE of the logits' cos/sin(w(a + b))
    parts now, at most MAX_KEY_FREQUENCIES). The logits' mean over pairs is kept in both."""
    if frequencies is None:
        frequencies = fewest_carrying(sum_frequency_norms(logits, p))[:MAX_KEY_FREQUENCIES]
    labels = (torch.arange(p).repeat_interleave(p) + torch.arange(p).repeat(p)) % p
    d = sum_directions(p, frequencies)  # [2K, p²]
    mean = logits.mean(0, keepdim=True)
    key_part = d.T @ (d @ (logits - mean))  # [p², vocab]
    restricted = F.cross_entropy(mean + key_part, labels)
    excluded = F.cross_entropy((logits - key_part)[train_mask], labels[train_mask])
    return PhaseLosses(list(frequencies), float(restricted), float(excluded))


def pair_fourier_norms(values: torch.Tensor, p: int) -> np.ndarray:
    """values [p², n] over the pairs (a-major) -> the norm over n of their 2-D Fourier transform over (a, b):
    entry [i, j] is how much lies along basis row i of a times basis row j of b. [p, p]"""
    basis = torch.as_tensor(fourier_basis(p)[0])  # [p, p]
    grid = values.double().reshape(p, p, -1)  # [a, b, n]
    transformed = torch.einsum("ia,abn,jb->ijn", basis, grid, basis)  # [p, p, n]
    return transformed.norm(dim=-1).numpy()


@dataclass
class GrokkingLab:
    p: int
    embedding_norms: np.ndarray  # [p//2 + 1] the number embedding's norm per frequency (0: constant)
    key_frequencies: list  # the fewest frequencies carrying KEY_SHARE of the embedding's squared norm
    neurons: np.ndarray  # [p, p, d_mlp] FFN activations at "=" for every (a, b), or [p, p, 0] without an FFN
    neuron_frequency: np.ndarray  # [d_mlp] the frequency that carries most of each neuron's (a, b) map
    logit_fourier: np.ndarray  # [p, p] norm over outputs of the logits' 2-D Fourier transform over (a, b)
    final: PhaseLosses  # restricted / excluded losses with the final key frequencies (Nanda et al.'s)
    test_accuracy: float  # on the pairs never trained on


def grokking_lab(model, p: int, train_mask: torch.Tensor) -> GrokkingLab:
    """Everything the grokking lab draws about a modular-addition model (p residues, its training pairs)."""
    hook = "blocks.0.mlp.hook_post"
    has_mlp = not model.cfg.attn_only
    logits, cache = all_pair_run(model, p, (hook,) if has_mlp else ())
    neurons = cache[hook].reshape(p, p, -1).numpy() if has_mlp else np.zeros((p, p, 0))
    norms = embedding_norms(model, p)
    keys = key_frequencies(norms)
    labels = (torch.arange(p).repeat_interleave(p) + torch.arange(p).repeat(p)) % p
    right = (logits.argmax(-1) == labels)[~train_mask].double().mean()
    return GrokkingLab(p, norms, keys, neurons, neuron_frequencies(neurons), pair_fourier_norms(logits, p),
                       phase_losses(logits, p, train_mask, keys), float(right))


def neuron_frequencies(neurons: np.ndarray) -> np.ndarray:
    """[p, p, d_mlp] -> for each neuron the frequency k whose terms (in a, in b, or in both) carry most of its
    map once the mean is removed. [d_mlp] int"""
    p, n = neurons.shape[0], neurons.shape[-1]
    if n == 0:
        return np.zeros(0, dtype=int)
    basis, _ = fourier_basis(p)
    # optimize=True contracts one axis at a time (two matrix products); the plain einsum loops over all p⁴·n terms
    t = np.einsum("ia,abn,jb->ijn", basis, neurons - neurons.mean((0, 1)), basis, optimize=True) ** 2  # [p, p, n]
    freq = frequency_of_rows(p)
    pair_frequency = np.maximum.outer(freq, freq).reshape(-1)  # [p²] the frequency of the term (row i, row j)
    energy = np.eye(p // 2 + 1)[pair_frequency].T @ t.reshape(p * p, n)  # [p//2 + 1, n] summed per frequency
    return energy[1:].argmax(0) + 1
