"""Transcoders trained the way the app trains an SAE: in the training child process, through the same run protocol,
slots and controls (model_core.features.app_run). transcoder_job() makes the run::ChildJob on the server's side; in
the child, TranscoderRun collects every layer's FFN inputs and outputs in one pass, trains the layers' transcoders
one after another (the live chart's steps run on across layers), evaluates the set and reads each layer's
features. The run's model is the set as an nn.ModuleList (its weights travel as one state dict)."""
from dataclasses import dataclass, field

import torch
import torch.nn as nn

from model_core.features.app_run import SAE_METRIC_KEYS, SAERun, sae_reporter
from model_core.features.budget import FLOPS_PER_THREAD, SAE_FLOPS, forward_flops
from model_core.features.dashboard import feature_stats
from model_core.features.training import SAETrainConfig
from model_core.features.transcoder import Transcoder, TranscoderConfig, check_model
from model_core.features.transcoder_evaluation import evaluate_transcoders
from model_core.features.transcoder_training import TranscoderTrainer, collect_pairs
from model_core.training.child import weights
from model_core.training.run_protocol import ChildJob, RunProgress

TRANSCODER_METRIC_KEYS = SAE_METRIC_KEYS + ("layer",)
REPORTS_PER_LAYER = 64


@dataclass
class TranscoderRunConfig:
    """What a transcoder run in the app trains (RunProgress.cfg of the run)."""

    n_layers: int
    d_transcoder: int  # features per layer
    k: int
    tokens: int  # pairs collected per layer and trained on
    window: int
    eval_tokens: int
    stats_tokens: int
    skip: bool = True
    train: SAETrainConfig = field(default_factory=lambda: SAETrainConfig(epochs=2.0))

    @property
    def steps_per_layer(self) -> int:
        return max(1, int(self.train.epochs * self.tokens) // self.train.batch_size)

    @property
    def max_steps(self) -> int:
        return self.n_layers * self.steps_per_layer


def transcoder_set(model_cfg, cfg: TranscoderRunConfig) -> nn.ModuleList:
    return nn.ModuleList([Transcoder(TranscoderConfig(model_cfg.d_model, cfg.d_transcoder, cfg.k, layer, cfg.skip))
                          for layer in range(model_cfg.n_layers)])


def transcoder_run_seconds(model_cfg, cfg: TranscoderRunConfig, threads: int) -> float:
    """Estimated wall seconds of the whole run on `threads` threads (collect, train every layer, evaluate, stats)."""
    full = forward_flops(model_cfg, model_cfg.n_layers, cfg.window)
    train = cfg.n_layers * cfg.tokens * cfg.train.epochs * SAE_FLOPS * model_cfg.d_model * cfg.d_transcoder
    flops = cfg.tokens * full + train + cfg.eval_tokens * 2 * full + cfg.n_layers * cfg.stats_tokens * full * 2
    return flops / (FLOPS_PER_THREAD * max(1, threads))


def transcoder_job(model, train_ids: torch.Tensor, val_ids: torch.Tensor, cfg: TranscoderRunConfig,
                   model_name: str, text_name: str) -> ChildJob:
    check_model(model.cfg)
    record = transcoder_set(model.cfg, cfg)
    progress = RunProgress(record, cfg, metric_keys=TRANSCODER_METRIC_KEYS)
    payload = dict(build=TranscoderRun, report=sae_reporter, model_config=model.cfg.to_dict(), weights=weights(model),
                   train=train_ids.numpy(), val=val_ids.numpy(), cfg=cfg, names=(model_name, text_name))
    return ChildJob(progress, payload)


class TranscoderRun(SAERun):
    """In the child: collect, train layer by layer, evaluate, read the features. `model` is the set."""

    metric_keys = TRANSCODER_METRIC_KEYS

    def make_model(self, payload: dict) -> nn.Module:
        return transcoder_set(self.lm.cfg, payload["cfg"])

    def run(self, callback) -> str:
        """-> "finished" or "stopped" (a stop while collecting leaves no set; while training, the layers not yet
        trained keep their first weights and the evaluation says how good the set is)."""
        self.state = "running"
        cfg = self.cfg
        pairs = collect_pairs(self.lm, self.train_ids, cfg.tokens, cfg.window, seed=cfg.train.seed,
                              progress=lambda n: callback({"outputs": {"collected": n}}),
                              before_batch=self._between_batches)
        if self.stopping or len(pairs[0]) < cfg.train.batch_size:
            self.state = "stopped"
            return self.state
        state = "finished"
        for layer, tc in enumerate(self.model):
            torch.manual_seed(cfg.train.seed + layer)
            self.trainer = TranscoderTrainer(tc, pairs[layer], cfg.train)
            self.trainer.follow(self)
            self.trainer.before_work = self.before_work
            offset = layer * cfg.steps_per_layer
            state = self.trainer.run(lambda m, offset=offset, layer=layer: callback(
                {**m, "step": m["step"] + offset, "layer": layer}),
                report_every=max(1, self.trainer.total_steps // REPORTS_PER_LAYER))
            pairs[layer] = self.trainer.acts = None  # each layer's buffer goes once it is trained
            if state == "stopped":
                break
        callback({"step": self.step_count, **self.results()})
        return state

    @property
    def step_count(self) -> int:
        if self.trainer is None:
            return 0
        return self.trainer.sae.cfg.layer * self.cfg.steps_per_layer + self.trainer.step_count

    def results(self) -> dict:
        cfg, lm = self.cfg, self.lm
        transcoders = list(self.model)
        evaluation = evaluate_transcoders(lm, transcoders, self.val_ids, cfg.eval_tokens, cfg.window).summary()
        stats = [feature_stats(lm, tc, self.val_ids[:cfg.stats_tokens], cfg.window) for tc in transcoders]
        return {"eval": {"loss_gap": evaluation["loss_gap"]},
                "outputs": {"evaluation": evaluation, "feature_stats": stats}}
