"""Training a transcoder on (FFN input, FFN output) pairs: the SAE trainer's loop, schedule, dead-feature loss and
controls (model_core.features.training), with the output as the target instead of the input.

The buffer holds each token's pair side by side, [N, 2 * d_model]: input | output. Each half is scaled to mean
squared norm d_model for training (one learning rate suits every layer), and the scales are folded back into the
weights at the end, so the transcoder reads and writes the model's own activations."""
from typing import Callable, Optional

import torch

from model_core.features.activations import activations_at_hooks, windows_of
from model_core.features.sae import SAEConfigError
from model_core.features.training import SAETrainConfig, SAETrainer, explained_variance
from model_core.features.transcoder import Transcoder, hook_names


class TranscoderTrainer(SAETrainer):
    """Trains transcoder on pairs [N, 2 * d_model] (kept, not copied)."""

    def __init__(self, transcoder: Transcoder, pairs: torch.Tensor, cfg: SAETrainConfig = SAETrainConfig()):
        super().__init__(transcoder, pairs, cfg)

    @property
    def d_model(self) -> int:
        return self.sae.cfg.d_model

    def check_buffer(self, pairs: torch.Tensor) -> None:
        if pairs.ndim != 2 or pairs.shape[1] != 2 * self.d_model:
            raise SAEConfigError(f"pairs of shape {list(pairs.shape)} do not fit a transcoder of a "
                                 f"{self.d_model}-wide model: [N, {2 * self.d_model}] (input | output) is needed.")

    def _input_scale(self) -> torch.Tensor:
        """[2 * d_model]: the input's scale on the first half, the output's on the second."""
        sample, d = self._sample(16_384), self.d_model
        scales = [(d / half.pow(2).sum(-1).mean().clamp_min(1e-12)).sqrt() for half in sample.split(d, dim=-1)]
        return torch.cat([s.expand(d) for s in scales])

    @property
    def scales(self) -> tuple[float, float]:
        return float(self.scale[0]), float(self.scale[-1])

    @torch.no_grad()
    def _init_from_data(self) -> None:
        """b_dec at the output's mean, unit decoder rows at random; the encoder scaled so the first outputs have
        the right size (least squares, as the SAE trainer does)."""
        tc = self.sae
        x, y = (self._sample(max(16_384, tc.cfg.d_transcoder)) * self.scale).split(self.d_model, dim=-1)
        tc.b_dec.copy_(y.mean(0))
        tc.normalize_decoder_()
        tc.W_enc.copy_(torch.randn(tc.W_enc.shape, generator=self.gen) / self.d_model ** 0.5)
        tc.b_enc.zero_()
        target, made = y - y.mean(0), tc(x) - y.mean(0)
        tc.W_enc.mul_((target * made).sum().clamp_min(1e-12) / made.pow(2).sum().clamp_min(1e-12))

    def losses(self, pairs: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """pairs [B, 2 * d_model] scaled -> (loss to minimise, metrics)."""
        tc = self.sae
        x, y = pairs.split(self.d_model, dim=-1)  # [B, d_model] each
        pre = tc.pre_activations(x)  # [B, d_tc]
        acts = tc.activate(pre)
        y_hat = tc.decode(acts, x)  # [B, d_model]
        mse = (y_hat - y).pow(2).sum(-1).mean()
        loss = mse
        fired = (acts != 0).any(0)
        dead = self.tokens_since_fired >= self.dead_tokens
        aux = self.aux_loss(y - y_hat.detach(), pre, dead) if self.cfg.aux_coefficient and dead.any() else None
        if aux is not None:
            loss = loss + self.cfg.aux_coefficient * aux
        with torch.no_grad():
            self.tokens_since_fired += len(x)
            self.tokens_since_fired[fired] = 0
            metrics = {"loss": float(loss), "mse": float(mse), "l0": float((acts != 0).sum(-1).float().mean()),
                       "explained_variance": explained_variance(y, y_hat),
                       "dead_fraction": float(dead.float().mean()), "aux_loss": float(aux) if aux is not None else 0.0}
        return loss, metrics

    @torch.no_grad()
    def finish(self) -> Transcoder:
        """Fold the two scales back in: the transcoder then reads and writes raw activations, its decoder rows
        still unit norm (TopK commutes with a positive scale). Only once."""
        s_in, s_out = self.scales
        if (s_in, s_out) != (1.0, 1.0):
            tc = self.sae
            tc.W_enc.mul_(s_in / s_out)
            tc.b_enc.div_(s_out)
            tc.b_dec.div_(s_out)
            if tc.W_skip is not None:
                tc.W_skip.mul_(s_in / s_out)
            self.scale = torch.ones_like(self.scale)
        self.sae.eval()
        return self.sae


def collect_pairs(model, ids: torch.Tensor, n_tokens: int, window: int, seed: int = 0, batch_tokens: int = 16_384,
                  progress: Optional[Callable[[int], None]] = None,
                  before_batch: Optional[Callable[[], bool]] = None) -> list[torch.Tensor]:
    """Every layer's (FFN input, FFN output) pairs on the same n_tokens positions of random windows of ids (a 1-D
    token split): a list over layers of [n_tokens, 2 * d_model], from one forward pass per batch. before_batch()
    -> False stops early (the pairs so far are returned)."""
    layers = range(model.cfg.n_layers)
    names = [name for layer in layers for name in hook_names(layer)]
    windows = windows_of(ids, window)
    gen = torch.Generator().manual_seed(seed)
    needed = -(-n_tokens // window)
    order = torch.cat([torch.randperm(len(windows), generator=gen) for _ in range(-(-needed // len(windows)))])
    order, per_pass, D = order[:needed], max(1, batch_tokens // window), model.cfg.d_model
    out = [torch.empty(needed * window, 2 * D) for _ in layers]
    filled = 0
    for start in range(0, needed, per_pass):
        if before_batch is not None and before_batch() is False:
            break
        acts = activations_at_hooks(model, windows[order[start:start + per_pass]], names)
        rows = slice(start * window, start * window + acts[names[0]].numel() // D)
        for layer in layers:
            x_name, y_name = hook_names(layer)
            out[layer][rows] = torch.cat([acts[x_name], acts[y_name]], dim=-1).reshape(-1, 2 * D)
        filled = rows.stop
        if progress is not None:
            progress(min(filled, n_tokens))
    return [pairs[:min(filled, n_tokens)] for pairs in out]
