"""Circuits read off the weights (Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits"):
what a head copies (its OV circuit W_E W_V W_O W_U), where it looks (its QK circuit W_E W_Q W_Kᵀ W_Eᵀ, and the
positional part W_pos W_Q W_Kᵀ W_posᵀ where positions are learned), its copying score, and how much each head
reads what an earlier head wrote (Q-, K- and V-composition).

Conventions are TransformerLens's (x @ W, so W_Q is [d_model, d_head], W_O [d_head, d_model], W_U [d_model,
vocab]) and so is the weight processing it applies on loading (fold_ln, center_writing_weights, center_unembed):
  * a pre-norm model's norm gains are folded into the weights that read the norm's output (ln1 into W_Q, W_K,
    W_V; the final norm into W_U); for LayerNorm the reading weights are then centred over d_model (LayerNorm's
    output has zero mean, so the mean row of a reading weight never acts), and so are the writing weights
    (W_E, W_pos, W_O: a mean written to the stream is removed by the next norm);
  * W_U is centred over the vocabulary (softmax ignores a logit added to every token);
  * the norms' scale (1 / rms of the stream) is not linear and is ignored, as in TransformerLens.
Differences, because our model has options TransformerLens's processing does not cover: a post-norm model (the
norm after the residual add) gets its raw weights, unfolded (TransformerLens refuses to fold post-norm
models); QK-norm's per-head gains are folded into W_Q and W_K (the normalisation itself is ignored); biases
play no part in any score.

Grouped-query attention (SmolLM2): query head h uses key/value head h // (n_heads / n_kv_heads), so its W_K and
W_V are repeated per query head and every score is per query head [L, H].

Rotary positions: q and k are rotated by their positions, so the true QK circuit between positions i and j is
W_Q R(i - j) W_Kᵀ, one matrix per distance. Like TransformerLens, the scores here use the unrotated W_Q W_Kᵀ:
the circuit at distance 0, the "content" part with no position in it. V-composition does not touch q or k and
means exactly what it means without rotation; Q- and K-composition say how much a head's query or key reads
what an earlier head wrote, before the rotation turns it by the distance.

Everything is computed in float64 from d_head-sized factors: no vocabulary x vocabulary matrix is ever built
(SmolLM2's would hold 49,152² numbers); the OV and QK circuits come as a few rows (top-k) instead."""
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

MAX_CIRCUIT_ROWS = 512  # rows of an OV or QK circuit computed in one call ([rows, vocab] float64: 200 MB at 49k)


class CircuitError(ValueError):
    """The circuit cannot be computed as asked; the message says why."""


@dataclass
class CircuitWeights:
    """A model's weights as the circuits read them (processed as described above), float64.
    H per layer is the number of query heads; K and V are repeated per query head under GQA."""

    W_E: torch.Tensor  # [vocab, d_model]
    W_pos: Optional[torch.Tensor]  # [block, d_model] for learned or sinusoidal positions, else None
    W_U: torch.Tensor  # [d_model, vocab]
    W_Q: torch.Tensor  # [L, H, d_model, d_head]
    W_K: torch.Tensor  # [L, H, d_model, d_head]
    W_V: torch.Tensor  # [L, H, d_model, d_head]
    W_O: torch.Tensor  # [L, H, d_head, d_model]
    folded: bool  # norm gains folded in (pre-norm models with a norm)
    centred: bool  # LayerNorm centring applied


@torch.no_grad()
def circuit_weights(model) -> CircuitWeights:
    """The model's embedding, unembedding and per-head Q, K, V, O weights, processed as TransformerLens does."""
    cfg = model.cfg
    H, Hkv, dh, D = cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.d_model
    fold = cfg.norm != "none" and cfg.norm_placement == "pre"
    centre = fold and cfg.norm == "layernorm"
    qs, ks, vs, os_ = [], [], [], []
    for block in model.blocks:
        attn = block.attn
        w = attn.W_qkv.weight.detach().double()  # [(H + 2 Hkv) dh, D]
        q, k, v = w.view(H + 2 * Hkv, dh, D).split((H, Hkv, Hkv))  # [H|Hkv, dh, D]
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [H|Hkv, D, dh]: x @ W
        k, v = (t.repeat_interleave(H // Hkv, dim=0) for t in (k, v))  # [H, D, dh]: one per query head
        if cfg.qk_norm:  # the per-head gains act after the normalisation: fold them like a norm's gain
            q = q * attn.q_norm.norm.weight.detach().double()
            k = k * attn.k_norm.norm.weight.detach().double()
        if fold:
            gain = block.ln1.norm.weight.detach().double()[None, :, None]  # [1, D, 1]
            q, k, v = q * gain, k * gain, v * gain
        if centre:
            q, k, v = (t - t.mean(1, keepdim=True) for t in (q, k, v))
        o = attn.W_o.weight.detach().double().view(D, H, dh).permute(1, 2, 0)  # [H, dh, D]
        if centre:
            o = o - o.mean(-1, keepdim=True)
        qs.append(q), ks.append(k), vs.append(v), os_.append(o)
    W_E = model.embed.weight.detach().double()  # [V, D]
    W_pos = model.position_embeddings(cfg.block_size).detach().double() if cfg.has_position_vectors else None
    W_U = model.unembed.weight.detach().double().T  # [D, V]
    if fold:
        W_U = W_U * model.ln_final.norm.weight.detach().double()[:, None]
    if centre:
        W_E = W_E - W_E.mean(-1, keepdim=True)
        W_pos = None if W_pos is None else W_pos - W_pos.mean(-1, keepdim=True)
        W_U = W_U - W_U.mean(0, keepdim=True)
    W_U = W_U - W_U.mean(-1, keepdim=True)  # center_unembed
    return CircuitWeights(W_E, W_pos, W_U, torch.stack(qs), torch.stack(ks), torch.stack(vs), torch.stack(os_),
                          fold, centre)


def _r(a: torch.Tensor) -> torch.Tensor:
    """R of the thin QR of a [..., n, k] (n >= k): a = Q R with orthonormal columns in Q, so ||a B||_F =
    ||R B||_F for any B: the d_model-sized side of a factor drops out. [..., k, k]"""
    return torch.linalg.qr(a, mode="r").R


def _pair_scores(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """left [L, H, dh, D], right [L, H, D, dh] (d_head-sized cores of the two factored matrices) ->
    ||left[l1, h1] @ right[l2, h2]||_F / (||left|| ||right||) [L, H, L, H], zero unless l1 < l2."""
    L, H = left.shape[:2]
    out = torch.zeros(L, H, L, H, dtype=torch.float64)
    left_norm = left.flatten(-2).norm(dim=-1)  # [L, H]
    right_norm = right.flatten(-2).norm(dim=-1)  # [L, H]
    dh, D = left.shape[-2:]
    for l1 in range(L - 1):
        later = right[l1 + 1:]  # [L', H, D, dh]
        product = left[l1].reshape(H * dh, D) @ later.permute(2, 0, 1, 3).reshape(D, -1)  # one GEMM: [H dh, L' H dh]
        product = product.view(H, dh, L - l1 - 1, H, dh)  # [h1, i, l2, h2, j]
        norms = product.square().sum((1, 4)).sqrt()  # [H, L', H]
        out[l1, :, l1 + 1:] = norms / left_norm[l1][:, None, None] / right_norm[l1 + 1:][None]
    return out


def composition_scores(model) -> dict[str, np.ndarray]:
    """Q-, K- and V-composition of every head with every head of a later layer (Elhage et al.):
    ||W_OV(1) M(2)||_F / (||W_OV(1)||_F ||M(2)||_F) with W_OV = W_V W_O and M = W_Q W_Kᵀ (Q), W_K W_Qᵀ (K),
    W_V W_O (V). -> {"q" | "k" | "v": [L, H, L, H]} (earlier layer, head, later layer, head), float64, zero where
    the second layer is not later. Equal to TransformerLens's all_composition_scores on the same weights."""
    w = circuit_weights(model)
    ov_left = _r(w.W_V) @ w.W_O  # [L, H, dh, D]: ||W_V W_O X|| = ||R_V W_O X||
    rights = {
        "q": w.W_Q @ _r(w.W_K).transpose(-1, -2),  # W_Q W_Kᵀ -> [L, H, D, dh]
        "k": w.W_K @ _r(w.W_Q).transpose(-1, -2),  # W_K W_Qᵀ
        "v": w.W_V @ _r(w.W_O.transpose(-1, -2)).transpose(-1, -2),  # W_V W_O
    }
    return {kind: _pair_scores(ov_left, right).numpy() for kind, right in rights.items()}


def ov_eigenvalues(model) -> np.ndarray:
    """Eigenvalues of every head's full OV circuit W_E W_V W_O W_U (vocab x vocab, rank <= d_head), from the
    d_head x d_head matrix W_O W_U W_E W_V, which has the same non-zero eigenvalues. [L, H, d_head] complex128"""
    w = circuit_weights(model)
    middle = w.W_U @ w.W_E  # [D, D]: the only product over the vocabulary, d_model² numbers
    small = w.W_O @ middle @ w.W_V  # [L, H, dh, dh]
    return torch.linalg.eigvals(small).numpy()


def copying_scores(model) -> np.ndarray:
    """Elhage et al.'s copying score of each head: Σλ / Σ|λ| over the eigenvalues λ of its full OV circuit
    (ov_eigenvalues). 1: every eigenvalue positive, the head copies the token it attends to into the output
    (raises its logit); -1: it suppresses it; near 0: neither. [L, H] float64"""
    lam = ov_eigenvalues(model)
    total = np.abs(lam).sum(-1)
    return np.divide(lam.sum(-1).real, total, out=np.zeros(total.shape), where=total > 0)


def _check_rows(tokens, n: int, what: str) -> torch.Tensor:
    ids = torch.as_tensor(np.asarray(tokens, dtype=np.int64).reshape(-1))
    if len(ids) == 0 or len(ids) > MAX_CIRCUIT_ROWS:
        raise CircuitError(f"ask for 1 to {MAX_CIRCUIT_ROWS} {what}, not {len(ids)}.")
    if int(ids.min()) < 0 or int(ids.max()) >= n:
        raise CircuitError(f"{what} must be from 0 to {n - 1}.")
    return ids


def _head(w: CircuitWeights, layer: int, head: int):
    L, H = w.W_Q.shape[:2]
    if not (0 <= layer < L and 0 <= head < H):
        raise CircuitError(f"there is no head {layer}.{head}: layers 0-{L - 1}, heads 0-{H - 1}.")
    return w.W_Q[layer, head], w.W_K[layer, head], w.W_V[layer, head], w.W_O[layer, head]


def ov_circuit_rows(model, layer: int, head: int, sources, targets=None, weights: Optional[CircuitWeights] = None):
    """Rows of the OV circuit W_E W_V W_O W_U: how much attending to source token s raises the logit of each
    output token. -> [len(sources), vocab] (or [len(sources), len(targets)]) float64, never vocab x vocab."""
    w = weights or circuit_weights(model)
    _, _, W_V, W_O = _head(w, layer, head)
    rows = _check_rows(sources, w.W_E.shape[0], "source tokens")
    W_U = w.W_U if targets is None else w.W_U[:, _check_rows(targets, w.W_U.shape[1], "output tokens")]
    return ((w.W_E[rows] @ W_V) @ (W_O @ W_U)).numpy()  # ([S, dh] @ [dh, V'])


def qk_circuit_rows(model, layer: int, head: int, queries, keys=None, weights: Optional[CircuitWeights] = None):
    """Rows of the direct-path QK circuit W_E W_Q W_Kᵀ W_Eᵀ / sqrt(d_head): the attention score a query token
    gives each key token from their embeddings alone (positions and earlier layers left out).
    -> [len(queries), vocab] (or [len(queries), len(keys)]) float64."""
    w = weights or circuit_weights(model)
    W_Q, W_K, _, _ = _head(w, layer, head)
    rows = _check_rows(queries, w.W_E.shape[0], "query tokens")
    W_Ek = w.W_E if keys is None else w.W_E[_check_rows(keys, w.W_E.shape[0], "key tokens")]
    return ((w.W_E[rows] @ W_Q) @ (W_Ek @ W_K).T / W_Q.shape[-1] ** 0.5).numpy()  # [Sq, dh] @ [dh, Sk]


def qk_positional(model, layer: int, head: int, weights: Optional[CircuitWeights] = None) -> np.ndarray:
    """The positional part of the QK circuit, W_pos W_Q W_Kᵀ W_posᵀ / sqrt(d_head): the score query position i
    gives key position j from the position vectors alone, masked to j <= i (NaN above). [block, block]
    CircuitError for rotary or no positions (nothing is added to the stream: see the module docstring)."""
    w = weights or circuit_weights(model)
    if w.W_pos is None:
        raise CircuitError("this model adds no position vectors to the stream (rotary or no positions), so its "
                           "QK circuit has no positional part of its own: rotary positions turn q and k instead.")
    W_Q, W_K, _, _ = _head(w, layer, head)
    scores = ((w.W_pos @ W_Q) @ (w.W_pos @ W_K).T / W_Q.shape[-1] ** 0.5).numpy()  # [P, P]
    scores[np.triu_indices(len(scores), 1)] = np.nan
    return scores


def top_k_per_row(rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest values of each row and their columns, largest first. -> ([S, k] values, [S, k] columns)"""
    k = max(1, min(int(k), rows.shape[1]))
    cols = np.argpartition(-rows, k - 1, axis=1)[:, :k]
    values = np.take_along_axis(rows, cols, axis=1)
    order = np.argsort(-values, axis=1)
    return np.take_along_axis(values, order, axis=1), np.take_along_axis(cols, order, axis=1)
