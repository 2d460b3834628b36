"""How good a transcoder set is, on windows of a validation text: per layer the explained variance of the FFN's
output, L0 and the dead share (features never active on these tokens); and the model's next-token loss with every
FFN replaced by its transcoder at once (the replacement model an attribution graph explains), beside the clean
loss."""
from dataclasses import asdict, dataclass

import torch

from model_core.analysis.ablation import eval_windows
from model_core.features.evaluation import ce_per_token
from model_core.features.transcoder import Transcoder, hook_names

EVAL_TOKENS = 32_768
BATCH_TOKENS = 8_192


@dataclass
class TranscoderEvaluation:
    explained_variance: list[float]  # per layer: 1 - sum ||y - ŷ||² / sum ||y - mean y||² (y the FFN's output)
    l0: list[float]  # per layer: active features per token
    dead_fraction: list[float]  # per layer: features never active on these tokens
    ce_loss_clean: float  # nats per token
    ce_loss_replaced: float  # with every FFN replaced by its transcoder
    n_tokens: int

    @property
    def loss_gap(self) -> float:
        return self.ce_loss_replaced - self.ce_loss_clean

    def summary(self) -> dict:
        return {**asdict(self), "loss_gap": self.loss_gap}


def replacement_hooks(transcoders: list[Transcoder], record=None) -> list[tuple]:
    """Forward hooks that put each transcoder's output in place of its FFN's; record(layer, y, ŷ, acts) sees each."""
    hooks, inputs = [], {}
    for tc in transcoders:
        x_name, y_name = hook_names(tc.cfg.layer)

        def keep(x, hook):
            inputs[hook.name] = x
            return x

        def replace(y, hook, tc=tc, x_name=x_name):
            x = inputs.pop(x_name).float()
            acts = tc.encode(x)
            y_hat = tc.decode(acts, x)
            if record is not None:
                record(tc.cfg.layer, y.float(), y_hat, acts)
            return y_hat.to(y.dtype)

        hooks += [(x_name, keep), (y_name, replace)]
    return hooks


@torch.inference_mode()
def evaluate_transcoders(model, transcoders: list[Transcoder], val_ids: torch.Tensor, n_tokens: int = EVAL_TOKENS,
                         window: int = None, seed: int = 0) -> TranscoderEvaluation:
    """The set on ~n_tokens of val_ids (a 1-D token split) in seeded windows (default: the block size)."""
    n_layers, d_tc = len(transcoders), transcoders[0].cfg.d_transcoder
    T = min(window or model.cfg.block_size, len(val_ids) - 1)
    windows = eval_windows(val_ids, T, max(1, n_tokens // T), seed)  # [n, T + 1]
    sums = {"err": torch.zeros(n_layers, dtype=torch.float64), "y": torch.zeros(n_layers, model.cfg.d_model,
            dtype=torch.float64), "yy": torch.zeros(n_layers, dtype=torch.float64),
            "active": torch.zeros(n_layers, dtype=torch.float64), "fires": torch.zeros(n_layers, d_tc, dtype=torch.long)}
    ce = {"clean": 0.0, "replaced": 0.0}

    def record(layer, y, y_hat, acts):
        y, y_hat, acts = (t.reshape(-1, t.shape[-1]) for t in (y, y_hat, acts))
        sums["err"][layer] += float((y - y_hat).double().pow(2).sum())
        sums["y"][layer] += y.double().sum(0)
        sums["yy"][layer] += float(y.double().pow(2).sum())
        sums["active"][layer] += float((acts != 0).sum())
        sums["fires"][layer] += (acts != 0).sum(0)

    hooks = replacement_hooks(transcoders, record)
    per_pass = max(1, BATCH_TOKENS // T)
    for start in range(0, len(windows), per_pass):
        batch = windows[start:start + per_pass]
        ce["clean"] += float(ce_per_token(model(batch[:, :-1])[0], batch[:, 1:]))
        ce["replaced"] += float(ce_per_token(model.run_with_hooks(batch[:, :-1], fwd_hooks=hooks)[0], batch[:, 1:]))
    n = windows[:, 1:].numel()
    variance = sums["yy"] / n - (sums["y"] / n).pow(2).sum(-1)
    return TranscoderEvaluation(
        explained_variance=(1 - (sums["err"] / n) / variance.clamp_min(1e-30)).tolist(),
        l0=(sums["active"] / n).tolist(), dead_fraction=(sums["fires"] == 0).double().mean(-1).tolist(),
        ce_loss_clean=ce["clean"] / n, ce_loss_replaced=ce["replaced"] / n, n_tokens=n)
