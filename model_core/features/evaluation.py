"""How good an SAE is, measured as SAELens reports it, on windows of a validation text:

- L0: active features per token (mean);
- dead fraction: features never active on any of the evaluation tokens;
- explained variance: 1 - sum ||x - x̂||² / sum ||x - mean x||², pooled over all tokens;
- CE loss recovered: the model's next-token loss with the reconstruction spliced in at the hook, scaled so
  that the hook zero-ablated scores 0 and the clean model 1: (CE_zero - CE_sae) / (CE_zero - CE_clean);
- the log10 density histogram (how often each feature fires).
"""
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from model_core.analysis.ablation import eval_windows, logits_from_layer
from model_core.features.activations import check_hook

EVAL_TOKENS = 32_768  # tokens the evaluation reads by default
BATCH_TOKENS = 8_192  # tokens per forward pass (three passes each: clean, reconstructed, zero-ablated)
DENSITY_FLOOR = -7.0  # log10 density shown for features that never fired (the histogram's first bin)


@dataclass
class SAEEvaluation:
    explained_variance: float
    ce_loss_recovered: float
    l0: float  # mean active features per token
    dead_fraction: float  # share of features never active on these tokens
    ce_loss_clean: float  # nats per token
    ce_loss_with_sae: float
    ce_loss_zero_ablated: float
    mse: float  # mean over tokens of ||x - x̂||²
    n_tokens: int
    density: np.ndarray = field(repr=False)  # [d_sae] share of tokens each feature fires on

    def log_density_histogram(self, bins: int = 40) -> tuple[np.ndarray, np.ndarray]:
        """(counts [bins], edges [bins+1]) of log10 density; dead features sit at DENSITY_FLOOR."""
        logs = np.log10(np.maximum(self.density, 10 ** DENSITY_FLOOR))
        return np.histogram(logs, bins=bins, range=(DENSITY_FLOOR, 0.0))

    def summary(self) -> dict:
        """The numbers as plain floats (the CLI prints them as JSON)."""
        keys = ("explained_variance", "ce_loss_recovered", "l0", "dead_fraction", "ce_loss_clean",
                "ce_loss_with_sae", "ce_loss_zero_ablated", "mse", "n_tokens")
        counts, edges = self.log_density_histogram()
        return {**{k: getattr(self, k) for k in keys},
                "log_density_histogram": {"counts": counts.tolist(), "edges": edges.round(3).tolist()}}


class _Sums:
    """Running sums over the evaluation batches (float64: the variance is a difference of large sums)."""

    def __init__(self, d_in: int, d_sae: int):
        self.sum_x, self.sum_sq, self.sum_err = torch.zeros(d_in, dtype=torch.float64), 0.0, 0.0
        self.fires = torch.zeros(d_sae, dtype=torch.long)
        self.ce = {"clean": 0.0, "sae": 0.0, "zero": 0.0}
        self.active = self.tokens = 0

    def add(self, x: torch.Tensor, x_hat: torch.Tensor, acts: torch.Tensor) -> None:
        """x, x_hat [N, d_in]; acts [N, d_sae]."""
        x64 = x.double()
        self.sum_x += x64.sum(0)
        self.sum_sq += float(x64.pow(2).sum())
        self.sum_err += float((x64 - x_hat.double()).pow(2).sum())
        active = acts != 0
        self.fires += active.sum(0)
        self.active += int(active.sum())
        self.tokens += len(x)


def ce_per_token(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """logits [B, T, V], targets [B, T] -> summed cross-entropy (nats) over all positions, a 0-d tensor."""
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), reduction="sum")


@torch.inference_mode()
def evaluate_sae(model, sae, val_ids: torch.Tensor, n_tokens: int = EVAL_TOKENS, window: int = None,
                 batch_tokens: int = BATCH_TOKENS, seed: int = 0) -> SAEEvaluation:
    """Evaluate sae at its hook on ~n_tokens of val_ids (a 1-D token split) in seeded windows of `window`
    tokens (default: the model's block size) plus each window's next token."""
    hook = sae.cfg.hook_name
    check_hook(model.cfg, hook)
    T = min(window or model.cfg.block_size, len(val_ids) - 1)
    windows = eval_windows(val_ids, T, max(1, n_tokens // T), seed)  # [n, T + 1]
    sums = _Sums(sae.cfg.d_in, sae.cfg.d_sae)
    per_pass = max(1, batch_tokens // T)
    for start in range(0, len(windows), per_pass):
        batch = windows[start:start + per_pass]
        _evaluate_batch(model, sae, hook, batch[:, :-1], batch[:, 1:], sums)
    return _result(sums)


def _evaluate_batch(model, sae, hook: str, x_ids: torch.Tensor, targets: torch.Tensor, sums: _Sums) -> None:
    def reconstruct(x, _hook):
        acts = sae.encode(x.float())
        x_hat = sae.decode(acts)
        sums.add(x.reshape(-1, x.shape[-1]), x_hat.reshape(-1, x.shape[-1]), acts.reshape(-1, acts.shape[-1]))
        return x_hat.to(x.dtype)

    resume = _resume_layer(hook, model.cfg.n_layers)
    if resume is None:  # inside a block: three whole passes
        sums.ce["clean"] += float(ce_per_token(model(x_ids)[0], targets))
        spliced = model.run_with_hooks(x_ids, fwd_hooks=[(hook, reconstruct)])[0]
        zeroed = model.run_with_hooks(x_ids, fwd_hooks=[(hook, lambda x, _h: torch.zeros_like(x))])[0]
    else:  # on the residual stream between blocks: the two edited passes start there from the clean one's stream
        kept = {}
        clean = model.run_with_hooks(x_ids, fwd_hooks=[(hook, lambda x, _h: kept.setdefault("x", x))])[0]
        sums.ce["clean"] += float(ce_per_token(clean, targets))
        spliced = logits_from_layer(model, resume, reconstruct(kept["x"], None))
        zeroed = logits_from_layer(model, resume, torch.zeros_like(kept["x"]))
    sums.ce["sae"] += float(ce_per_token(spliced, targets))
    sums.ce["zero"] += float(ce_per_token(zeroed, targets))


def _resume_layer(hook: str, n_layers: int):
    """The block a pass edited at hook can resume from (resid_pre of L: L; resid_post of L: L + 1), else None."""
    parts = hook.split(".")
    if len(parts) != 3 or parts[0] != "blocks" or parts[2] not in ("hook_resid_pre", "hook_resid_post"):
        return None
    layer = int(parts[1]) + (parts[2] == "hook_resid_post")
    return layer if layer <= n_layers else None


def _result(sums: _Sums) -> SAEEvaluation:
    n = max(sums.tokens, 1)
    variance = sums.sum_sq / n - float((sums.sum_x / n).pow(2).sum())
    ce = {k: v / n for k, v in sums.ce.items()}
    gap = ce["zero"] - ce["clean"]
    density = (sums.fires.double() / n).numpy()
    return SAEEvaluation(
        explained_variance=1.0 - (sums.sum_err / n) / max(variance, 1e-30),
        ce_loss_recovered=(ce["zero"] - ce["sae"]) / gap if abs(gap) > 1e-12 else float("nan"),
        l0=sums.active / n, dead_fraction=float((sums.fires == 0).double().mean()),
        ce_loss_clean=ce["clean"], ce_loss_with_sae=ce["sae"], ce_loss_zero_ablated=ce["zero"],
        mse=sums.sum_err / n, n_tokens=sums.tokens, density=density)
