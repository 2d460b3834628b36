"""Training an SAE on a buffer of activations: Adam on the reconstruction error (plus L1 for ReLU SAEs),
decoder rows kept at unit norm, dead features pulled back by an auxiliary loss (AuxK, Gao et al. 2024).

Like model_core.training.trainer.Trainer it knows nothing about the app: progress goes to a callback, and pause(),
resume() and stop() may be called from another thread while run() trains.

Choices, measured on the classroom model (docs/features.md): activations are scaled so their mean squared
norm is d_in (one learning rate suits every model; the scale is folded back into the biases at the end),
b_dec starts at the data's mean, a feature silent for 320 mean gaps between firings (d_sae / k tokens) counts as
dead and AuxK trains it at full weight (a fixed 50k window and weight 1/32 left 5.9 % of the classroom SAE's
features dead), and the learning rate decays to zero over the last fifth of the steps."""
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable, Optional

import torch

from model_core.features.sae import SAEConfigError, SparseAutoencoder
from model_core.training.run_control import RunControl

# a feature silent for this many mean gaps between firings (d_sae / k tokens) counts as dead: 320 gaps is 10k tokens
# on the classroom SAE (k 32), where 50k left 5 % dead; at k 8 a 10k window left 51 % dead and 41k 8 %
DEAD_GAPS = 320


def default_dead_tokens(d_sae: int, k: int) -> int:
    """The dead window when SAETrainConfig.dead_tokens is None: DEAD_GAPS mean gaps between a feature's firings."""
    return round(DEAD_GAPS * d_sae / k)


@dataclass
class SAETrainConfig:
    lr: float = 4e-3  # Adam's peak learning rate (on activations scaled to mean squared norm d_in)
    batch_size: int = 1024  # activations per step
    epochs: float = 1.0  # passes over the activation buffer
    l1_coefficient: float = 5.0  # standard (ReLU) SAEs: weight of the L1 sparsity penalty
    aux_coefficient: float = 1.0  # weight of the AuxK loss that trains dead features on the leftover error
    # a feature that fired on none of the last this-many tokens counts as dead; None: DEAD_GAPS x d_sae / k, the
    # mean gap between a feature's firings (10,240 tokens at 1,024 features and k 32, 40,960 at k 8)
    dead_tokens: Optional[int] = None
    warmup_steps: int = 20  # linear warm-up of the learning rate
    decay_fraction: float = 0.2  # the last share of the steps decays the learning rate linearly to 0
    init: str = "random"  # decoder rows start at random directions ("random") or centred data points ("data")
    seed: int = 0

    def validate(self) -> "SAETrainConfig":
        checks = [("lr", self.lr > 0 and math.isfinite(self.lr)), ("batch_size", self.batch_size >= 1),
                  ("epochs", self.epochs > 0), ("l1_coefficient", self.l1_coefficient >= 0),
                  ("aux_coefficient", self.aux_coefficient >= 0),
                  ("dead_tokens", self.dead_tokens is None or self.dead_tokens >= 1),
                  ("decay_fraction", 0 <= self.decay_fraction <= 1)]
        for name, ok in checks:
            if not ok:
                raise SAEConfigError(f"{name} = {getattr(self, name)!r} is out of range.")
        return self

    def to_dict(self) -> dict:
        return asdict(self)


def explained_variance(x: torch.Tensor, x_hat: torch.Tensor) -> float:
    """1 - sum ||x - x̂||² / sum ||x - mean(x)||² over the rows of x [N, d] (SAELens's pooled definition)."""
    x, x_hat = x.double(), x_hat.double()
    total = (x - x.mean(0)).pow(2).sum()
    return float(1.0 - (x - x_hat).pow(2).sum() / total.clamp_min(1e-30))


class SAETrainer(RunControl):
    """Trains sae on activations [N, d_in] (kept, not copied)."""

    def __init__(self, sae: SparseAutoencoder, activations: torch.Tensor, cfg: SAETrainConfig = SAETrainConfig()):
        super().__init__()
        self.sae, self.cfg = sae, cfg.validate()
        self.check_buffer(activations)
        if len(activations) < cfg.batch_size:
            raise SAEConfigError(f"{len(activations)} activations are fewer than one batch of {cfg.batch_size}.")
        self.acts = activations
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.scale = self._input_scale()  # x * scale has mean squared norm d_in
        self.total_steps = max(1, int(cfg.epochs * len(activations)) // cfg.batch_size)
        self._init_from_data()
        self.optimizer = torch.optim.Adam(sae.parameters(), lr=cfg.lr, betas=(0.9, 0.999))
        self.dead_tokens = cfg.dead_tokens or default_dead_tokens(sae.cfg.d_sae, sae.cfg.k)
        self.tokens_since_fired = torch.zeros(sae.cfg.d_sae, dtype=torch.long)
        self.step_count, self.tokens_seen, self.elapsed = 0, 0, 0.0
        self.history: list[dict] = []
        self._order, self._cursor = torch.empty(0, dtype=torch.long), 0

    # ------------------------------------------------------------------ set-up
    def check_buffer(self, activations: torch.Tensor) -> None:
        if activations.ndim != 2 or activations.shape[1] != self.sae.cfg.d_in:
            raise SAEConfigError(f"activations of shape {list(activations.shape)} do not fit an SAE reading "
                                 f"{self.sae.cfg.d_in}-wide activations.")

    def _sample(self, n: int) -> torch.Tensor:
        pick = torch.randint(len(self.acts), (min(n, len(self.acts)),), generator=self.gen)
        return self.acts[pick].float()

    def _input_scale(self) -> float:
        sample = self._sample(16_384)
        return float(math.sqrt(self.sae.cfg.d_in / sample.pow(2).sum(-1).mean().clamp_min(1e-12)))

    @torch.no_grad()
    def _init_from_data(self) -> None:
        """b_dec at the mean; decoder rows at centred data points (unit norm), encoder their transpose."""
        sae = self.sae
        sample = self._sample(max(16_384, sae.cfg.d_sae)) * self.scale
        mean = sample.mean(0)
        sae.b_dec.copy_(mean)
        rows = sample[torch.randperm(len(sample), generator=self.gen)[:sae.cfg.d_sae]] - mean
        rows = rows + 0.1 * rows.norm(dim=-1, keepdim=True).mean() * torch.randn(rows.shape, generator=self.gen) \
            / math.sqrt(sae.cfg.d_in)  # a little noise: two equal samples give two different features
        if self.cfg.init == "data":
            sae.W_dec.copy_(rows)
        sae.normalize_decoder_()
        sae.W_enc.copy_(sae.W_dec.T)
        sae.b_enc.zero_()
        # scale the encoder so the first reconstructions have the right size: aligned with the data, the k
        # largest projections sum to several times x (least squares: x - b_dec ≈ alpha * (x̂ - b_dec))
        target, made = sample - mean, sae(sample) - mean
        sae.W_enc.mul_((target * made).sum() / made.pow(2).sum().clamp_min(1e-12))

    # ------------------------------------------------------------------ one step
    def lr_at(self, step: int) -> float:
        cfg = self.cfg
        if step < cfg.warmup_steps:
            return cfg.lr * (step + 1) / (cfg.warmup_steps + 1)
        decay_start = self.total_steps * (1 - cfg.decay_fraction)
        if step < decay_start:
            return cfg.lr
        return cfg.lr * max(0.0, (self.total_steps - step) / max(1.0, self.total_steps - decay_start))

    def next_batch(self) -> torch.Tensor:
        """The next batch of the shuffled buffer (a new order every pass), scaled."""
        if self._cursor + self.cfg.batch_size > len(self._order):
            self._order, self._cursor = torch.randperm(len(self.acts), generator=self.gen), 0
        index = self._order[self._cursor:self._cursor + self.cfg.batch_size]
        self._cursor += self.cfg.batch_size
        return self.acts[index].float() * self.scale

    def losses(self, x: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """x [B, d_in] scaled activations -> (loss to minimise, metrics)."""
        sae = self.sae
        pre = sae.pre_activations(x)  # [B, d_sae]
        acts = sae.activate(pre)  # [B, d_sae]
        x_hat = sae.decode(acts)  # [B, d_in]
        mse = (x_hat - x).pow(2).sum(-1).mean()
        loss = mse
        if sae.cfg.architecture == "standard":
            loss = loss + self.cfg.l1_coefficient * acts.sum(-1).mean() / math.sqrt(sae.cfg.d_in)
        fired = (acts > 0).any(0)  # [d_sae]
        dead = self.tokens_since_fired >= self.dead_tokens
        aux = self.aux_loss(x - x_hat.detach(), pre, dead) if self.cfg.aux_coefficient and dead.any() else None
        if aux is not None:
            loss = loss + self.cfg.aux_coefficient * aux
        with torch.no_grad():
            self.tokens_since_fired += len(x)
            self.tokens_since_fired[fired] = 0
            metrics = {"loss": float(loss), "mse": float(mse), "l0": float((acts > 0).sum(-1).float().mean()),
                       "explained_variance": explained_variance(x, x_hat),
                       "dead_fraction": float(dead.float().mean()), "aux_loss": float(aux) if aux is not None else 0.0}
        return loss, metrics

    def aux_loss(self, error: torch.Tensor, pre: torch.Tensor, dead: torch.Tensor) -> torch.Tensor:
        """The dead features' top k_aux pre-activations reconstruct what the live ones left over (error [B, d_in]),
        so their encoders learn to fire again; scaled down while few are dead."""
        dead_ids = dead.nonzero().squeeze(1)  # [n_dead]: only their columns are read (few once training settles)
        k_aux = min(self.sae.cfg.d_in // 2, len(dead_ids))
        top = pre[:, dead_ids].topk(k_aux, dim=-1, sorted=False)  # [B, k_aux] indices among the dead
        aux_acts = torch.zeros(len(pre), len(dead_ids)).scatter(-1, top.indices, torch.relu(top.values))
        error_hat = aux_acts @ self.sae.W_dec[dead_ids]  # [B, d_in], no bias: b_dec is already in the error
        scale = min(len(dead_ids) / max(k_aux, 1), 1.0)
        return scale * (error_hat - error).pow(2).sum(-1).mean()

    def step(self) -> dict:
        """One optimisation step; returns its metrics."""
        self.before_work()
        start = time.perf_counter()
        lr = self.lr_at(self.step_count)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        x = self.next_batch()
        loss, metrics = self.losses(x)
        if not math.isfinite(metrics["loss"]):
            raise FloatingPointError("the SAE's loss is not a number: try a lower learning rate.")
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.sae.remove_parallel_gradient_()
        self.optimizer.step()
        self.sae.normalize_decoder_()
        self.step_count += 1
        self.tokens_seen += len(x)
        self.elapsed += time.perf_counter() - start
        metrics.update(step=self.step_count, tokens=self.tokens_seen, lr=lr, seconds=self.elapsed)
        self.history.append(metrics)
        return metrics

    # ------------------------------------------------------------------ the loop
    def run(self, callback: Optional[Callable[[dict], None]] = None, report_every: int = 10) -> str:
        """Train for total_steps (or until stop()); callback(metrics) every report_every steps and at the end.
        Returns the final state; the SAE is then ready (finish() has run) unless it was stopped."""
        self.state = "running"
        self.sae.train()
        try:
            while self.step_count < self.total_steps and not self.stopping:
                if self.pausing:
                    self.wait_while_paused()
                    continue
                metrics = self.step()
                if callback is not None and (self.step_count % report_every == 0 or
                                             self.step_count == self.total_steps):
                    callback(metrics)
            self.state = "stopped" if self.stopping else "finished"
        except BaseException:
            self.state = "error"
            raise
        finally:
            self.finish()
        return self.state

    @torch.no_grad()
    def finish(self) -> SparseAutoencoder:
        """Fold the input scale back into the biases: the SAE then reads raw activations. Only once."""
        if self.scale != 1.0:
            # pre(x * s) = s * pre'(x) with b_enc' = b_enc / s and b_dec' = b_dec / s; topk and relu commute
            # with a positive scale, so acts' = acts / s and decode' = decode / s (W_enc, W_dec unchanged)
            self.sae.b_enc.div_(self.scale)
            self.sae.b_dec.div_(self.scale)
            self.scale = 1.0
        self.sae.eval()
        return self.sae
