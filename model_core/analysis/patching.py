"""Activation patching: run a clean and a corrupted prompt (same length in tokens), copy one activation from
the clean run into the corrupted one, and measure how much of the clean answer comes back.

Metric: the logit difference at the last position between the clean answer and the corrupted answer,
normalised so 0 is the corrupted run and 1 the clean one. Sweeps (one patch per row of a batch):
    resid_pre   the residual stream entering each layer, at each position      -> [L, T]
    mlp_out     each MLP layer's output, at each position                      -> [L, T]
    z           each head's output (hook_z), at every position at once         -> [L, H]
    z_pos       each head's output at each position, in one layer              -> [H, T]
A patch in layer l changes nothing before it, so every row starts from the corrupted run's stream entering
layer l and runs the remaining layers only; rows are batched, and only the last position is unembedded.
Before the first position where the prompts differ, both runs are identical (attention is causal): patches
there restore exactly 0 and are not run."""
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from model_core.analysis.interruptible import between_batches
from model_core.model.cache import full_name

PATCH_KINDS = ("resid_pre", "mlp_out", "z", "z_pos")
ROW_TOKENS = 8192  # rows x tokens run at once (bounds the activations of one batch)


class PatchingError(ValueError):
    """The prompts or the request do not allow patching; the message says why."""


@dataclass
class PatchingResult:
    kind: str
    restored: np.ndarray  # [rows, cols]: 0 = as corrupted, 1 = as clean
    rows: str  # "layer" or "head"
    cols: str  # "position" or "head"
    layer: Optional[int]  # the layer of a z_pos sweep
    target: int  # the clean answer
    baseline: int  # the corrupted answer
    clean_diff: float  # logit(target) - logit(baseline) on the clean prompt
    corrupted_diff: float  # the same on the corrupted prompt

    def best(self) -> tuple[int, int]:
        """(row, col) of the patch that restores the most."""
        row, col = np.unravel_index(np.nanargmax(self.restored), self.restored.shape)
        return int(row), int(col)


@dataclass
class PromptPair:
    """The two runs every sweep starts from."""

    model: object
    clean: torch.Tensor  # (1, T)
    corrupted: torch.Tensor  # (1, T)
    clean_cache: object  # ActivationCache of the clean run (the hooks a sweep copies from)
    corrupted_resid: list  # [L] (1, T, D) the corrupted stream entering each layer
    target: int
    baseline: int
    clean_diff: float
    corrupted_diff: float

    def restored(self, diff: torch.Tensor) -> np.ndarray:
        return ((diff - self.corrupted_diff) / (self.clean_diff - self.corrupted_diff)).numpy()

    @property
    def first_difference(self) -> int:
        """The first position where the prompts differ: every activation before it is the same in both runs."""
        return int((self.clean[0] != self.corrupted[0]).int().argmax())

    def restored_by_position(self, per_position) -> np.ndarray:
        """[T] restored fractions, per_position(positions) -> (len(positions),) logit differences run only
        from the first difference on (0 before it)."""
        T, first = self.clean.size(1), self.first_difference
        out = np.zeros(T)
        out[first:] = self.restored(per_position(range(first, T)))
        return out


def answers(clean_logits: torch.Tensor, corrupted_logits: torch.Tensor) -> tuple[int, int]:
    """(clean's top token, corrupted's top token; clean's second if both prompts agree) at the last position."""
    target = int(clean_logits.argmax())
    baseline = int(corrupted_logits.argmax())
    if baseline == target:
        baseline = int(clean_logits.topk(2).indices[1])
    return target, baseline


@torch.inference_mode()
def prompt_pair(model, clean_ids: list[int], corrupted_ids: list[int], target: Optional[int] = None,
                baseline: Optional[int] = None) -> PromptPair:
    if len(clean_ids) != len(corrupted_ids):
        raise PatchingError(f"the clean prompt is {len(clean_ids)} tokens and the corrupted one {len(corrupted_ids)}: "
                            "patching copies position by position, so they must be the same length. Change a "
                            "word for one that is the same number of tokens.")
    if len(clean_ids) == 0:
        raise PatchingError("the prompts are empty.")
    V = model.cfg.vocab_size
    for token in (target, baseline):
        if token is not None and not 0 <= token < V:
            raise PatchingError(f"token id {token} is outside the vocabulary (0 to {V - 1}).")
    clean, corrupted = torch.tensor([clean_ids]), torch.tensor([corrupted_ids])
    keep = ("hook_resid_pre", "hook_mlp_out", "attn.hook_z")
    clean_logits, clean_cache = model.run_with_cache(clean, names_filter=lambda n: n.endswith(keep))
    corrupted_logits, corrupted_cache = model.run_with_cache(corrupted, names_filter=lambda n: n.endswith(keep[0]))
    auto = answers(clean_logits[0, -1], corrupted_logits[0, -1])
    target = auto[0] if target is None else target
    baseline = auto[1] if baseline is None else baseline
    if target == baseline:
        raise PatchingError("the answer and the alternative are the same token: pick two different tokens.")
    clean_diff = float(clean_logits[0, -1, target] - clean_logits[0, -1, baseline])
    corrupted_diff = float(corrupted_logits[0, -1, target] - corrupted_logits[0, -1, baseline])
    if abs(clean_diff - corrupted_diff) < 1e-6:
        raise PatchingError("both prompts give the same logit difference, so there is nothing to restore: pick a "
                            "corrupted prompt whose answer differs.")
    resid = [corrupted_cache["resid_pre", layer] for layer in range(model.cfg.n_layers)]
    return PromptPair(model, clean, corrupted, clean_cache, resid, target, baseline, clean_diff, corrupted_diff)


def last_logit_diff(model, x: torch.Tensor, target: int, baseline: int) -> torch.Tensor:
    """(B,) logit(target) - logit(baseline) at the last position of residual streams x (B, T, D) leaving the last block."""
    final = model.ln_final(x[:, -1])  # (B, D)
    W_U, b_U = model.unembed.weight, model.unembed.bias
    diff = final @ (W_U[target] - W_U[baseline])  # (B,)
    return diff + (b_U[target] - b_U[baseline]) if b_U is not None else diff


@torch.inference_mode()
def run_from_layer(pair: PromptPair, layer: int, x: torch.Tensor, hooks=()) -> torch.Tensor:
    """(B,) logit differences of streams x (B, T, D) entering `layer`, through the remaining blocks."""
    model = pair.model
    with model.hooks(list(hooks)):
        for block in model.blocks[layer:]:
            x = block(x)
    return last_logit_diff(model, x, pair.target, pair.baseline).double()


def rows_per_batch(T: int) -> int:
    return max(1, ROW_TOKENS // T)


def sweep_layer(pair: PromptPair, layer: int, n_rows: int, patch_stream=None, hook=None) -> torch.Tensor:
    """(n_rows,) logit differences of n_rows copies of the corrupted run from `layer` on, row r patched by
    patch_stream(x, rows) (the stream entering the layer) or by hook = (hook name, fn(act, rows) -> act)."""
    T = pair.clean.size(1)
    out = []
    for start in range(0, n_rows, rows_per_batch(T)):
        between_batches()
        rows = range(start, min(n_rows, start + rows_per_batch(T)))
        x = pair.corrupted_resid[layer].expand(len(rows), -1, -1).clone()  # (b, T, D)
        if patch_stream is not None:
            patch_stream(x, rows)
        hooks = [] if hook is None else [(hook[0], lambda act, _hp, rows=rows: hook[1](act.clone(), rows))]
        out.append(run_from_layer(pair, layer, x, hooks))
    return torch.cat(out)


@torch.inference_mode()
def patching_sweep(model, clean_ids: list[int], corrupted_ids: list[int], kind: str = "resid_pre",
                   layer: Optional[int] = None, target: Optional[int] = None,
                   baseline: Optional[int] = None) -> PatchingResult:
    """One sweep of patches (see the module docstring); layer is the layer of a z_pos sweep."""
    if kind not in PATCH_KINDS:
        raise PatchingError(f"kind must be one of {', '.join(PATCH_KINDS)}, got {kind!r}.")
    cfg = model.cfg
    if kind == "mlp_out" and cfg.attn_only:
        raise PatchingError("this model has no FFN layers (attention only): patch the residual stream or heads.")
    if kind == "z_pos" and (layer is None or not 0 <= layer < cfg.n_layers):
        raise PatchingError(f"pick a layer from 0 to {cfg.n_layers - 1} for the head-by-position sweep.")
    was_training = model.training
    model.eval()
    try:
        pair = prompt_pair(model, clean_ids, corrupted_ids, target, baseline)
        restored = SWEEPS[kind](pair, layer)
    finally:
        model.train(was_training)
    rows, cols = {"resid_pre": ("layer", "position"), "mlp_out": ("layer", "position"), "z": ("layer", "head"),
                  "z_pos": ("head", "position")}[kind]
    return PatchingResult(kind, restored, rows, cols, layer if kind == "z_pos" else None, pair.target,
                          pair.baseline, pair.clean_diff, pair.corrupted_diff)


def position_sweep(pair: PromptPair, short: str) -> np.ndarray:
    """[L, T]: the row for (layer l, position p) gets the clean run's `short` activation ('resid_pre': the
    stream entering layer l; 'mlp_out': layer l's MLP output) at position p."""
    def per_layer(layer):
        clean = pair.clean_cache[short, layer][0]  # (T, D)

        def per_position(positions):
            def patch(act, rows):
                for i, r in enumerate(rows):
                    act[i, positions[r]] = clean[positions[r]]
                return act
            if short == "resid_pre":  # the stream a row starts from
                return sweep_layer(pair, layer, len(positions), patch_stream=patch)
            return sweep_layer(pair, layer, len(positions), hook=(full_name((short, layer)), patch))
        return pair.restored_by_position(per_position)
    return np.stack([per_layer(layer) for layer in range(pair.model.cfg.n_layers)])


def resid_sweep(pair: PromptPair, _layer=None) -> np.ndarray:
    return position_sweep(pair, "resid_pre")


def mlp_sweep(pair: PromptPair, _layer=None) -> np.ndarray:
    return position_sweep(pair, "mlp_out")


def head_sweep(pair: PromptPair, _layer=None) -> np.ndarray:
    """[L, H]: row h of layer l's batch gets head h's clean output at every position."""
    H = pair.model.cfg.n_heads

    def per_layer(layer):
        clean = pair.clean_cache["z", layer][0]  # (T, H, dh)

        def patch(act, rows):
            for i, h in enumerate(rows):
                act[i, :, h] = clean[:, h]
            return act
        return sweep_layer(pair, layer, H, hook=(f"blocks.{layer}.attn.hook_z", patch))
    return pair.restored(torch.stack([per_layer(layer) for layer in range(pair.model.cfg.n_layers)]))


def head_position_sweep(pair: PromptPair, layer: int) -> np.ndarray:
    """[H, T]: the row for (h, p) gets head h's clean output at position p, in one layer."""
    H, T, first = pair.model.cfg.n_heads, pair.clean.size(1), pair.first_difference
    clean = pair.clean_cache["z", layer][0]  # (T, H, dh)
    n = T - first  # positions from the first difference on

    def patch(act, rows):
        for i, r in enumerate(rows):
            h, p = divmod(r, n)
            act[i, first + p, h] = clean[first + p, h]
        return act
    out = np.zeros((H, T))
    diffs = sweep_layer(pair, layer, H * n, hook=(f"blocks.{layer}.attn.hook_z", patch)).view(H, n)
    out[:, first:] = pair.restored(diffs)
    return out


SWEEPS = {"resid_pre": resid_sweep, "mlp_out": mlp_sweep, "z": head_sweep, "z_pos": head_position_sweep}
