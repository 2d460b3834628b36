"""An SAE trained the way the app trains a model: in the training child process (model_core.training.child), through
the same run protocol. sae_job() makes the run::ChildJob on the server's side; in the child, SAERun collects the
activations, trains the SAE, evaluates it and reads its features, and pause/resume/stop reach every phase."""
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from model_core.features.activations import check_hook, collect_activations
from model_core.features.dashboard import feature_stats
from model_core.features.evaluation import evaluate_sae
from model_core.features.sae import SAEConfig, SparseAutoencoder
from model_core.features.training import SAETrainConfig, SAETrainer
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from model_core.training.child import weights
from model_core.training.run_control import RunControl
from model_core.training.run_protocol import ChildJob, RunProgress

SAE_METRIC_KEYS = ("step", "loss", "l0", "dead_fraction", "explained_variance", "lr", "elapsed")
REPORTS = 256  # about this many points of the live chart over a run


@dataclass
class SAERunConfig:
    """What an SAE run in the app trains (RunProgress.cfg of the run)."""

    hook: str  # the hook point it reads, e.g. blocks.2.hook_resid_post
    d_sae: int  # features
    k: int  # active features per token (TopK)
    tokens: int  # activations collected and trained on
    window: int  # tokens per window of text (the model's context, at most 128)
    eval_tokens: int  # validation tokens the final evaluation reads
    stats_tokens: int  # validation tokens the feature statistics read (the Features tab's examples)
    train: SAETrainConfig = field(default_factory=SAETrainConfig)

    @property
    def max_steps(self) -> int:
        return max(1, int(self.train.epochs * self.tokens) // self.train.batch_size)


def sae_job(model, train_ids: torch.Tensor, val_ids: torch.Tensor, cfg: SAERunConfig, model_name: str,
            text_name: str) -> ChildJob:
    """The run as the server keeps it (its record holds an SAE of the same shape, which the child's weights
    fill) and as the child gets it (the model's weights, the two splits, the settings)."""
    d_in = check_hook(model.cfg, cfg.hook)
    sae = SparseAutoencoder(SAEConfig(d_in, cfg.d_sae, "topk", cfg.k, cfg.hook, model_name,
                                      extra={"dataset_path": text_name, "context_size": cfg.window,
                                             "training": cfg.train.to_dict(), "training_tokens": cfg.tokens}))
    progress = RunProgress(sae, cfg, metric_keys=SAE_METRIC_KEYS)
    payload = dict(build=SAERun, report=sae_reporter, model_config=model.cfg.to_dict(), weights=weights(model),
                   sae_config=sae.cfg.to_dict(), train=train_ids.numpy(), val=val_ids.numpy(), cfg=cfg)
    return ChildJob(progress, payload)


class SAERun(RunControl):
    """In the child: collect, train, evaluate, read the features. `model` is the SAE (the weights the child sends
    at a pause and at the end); the language model is `lm`."""

    metric_keys = SAE_METRIC_KEYS  # what the reporter sends of the trainer's metrics

    def __init__(self, payload: dict):
        super().__init__()
        self.lm = GPT(GPTConfig.from_dict(payload["model_config"]))
        self.lm.load_state_dict({k: torch.from_numpy(v) for k, v in payload["weights"].items()})
        self.lm.eval().requires_grad_(False)
        self.model = self.make_model(payload)
        self.train_ids, self.val_ids = torch.from_numpy(payload["train"]), torch.from_numpy(payload["val"])
        self.cfg: SAERunConfig = payload["cfg"]
        self.trainer: Optional[SAETrainer] = None
        self._state = "idle"

    def make_model(self, payload: dict):
        return SparseAutoencoder(SAEConfig(**payload["sae_config"]))

    @property
    def state(self) -> str:  # the phase that runs answers (the trainer parks in its own wait_while_paused)
        return self.trainer.state if self.trainer is not None else self._state

    @state.setter
    def state(self, value: str) -> None:
        self._state = value

    @property
    def step_count(self) -> int:
        return self.trainer.step_count if self.trainer is not None else 0

    def run(self, callback: Callable[[dict], None]) -> str:
        """-> "finished" or "stopped" (a stop while collecting leaves no SAE: no evaluation is sent)."""
        self.state = "running"
        cfg = self.cfg
        acts = collect_activations(self.lm, self.train_ids, cfg.hook, cfg.tokens, cfg.window, seed=cfg.train.seed,
                                   progress=lambda n: callback({"outputs": {"collected": n}}),
                                   before_batch=self._between_batches)
        if self.stopping or len(acts) < cfg.train.batch_size:
            self.state = "stopped"
            return self.state
        torch.manual_seed(cfg.train.seed)
        self.trainer = SAETrainer(self.model, acts, cfg.train)
        self.trainer.follow(self)
        self.trainer.before_work = self.before_work
        state = self.trainer.run(callback, report_every=max(1, self.trainer.total_steps // REPORTS))
        self.trainer.acts = acts = None  # the buffer is the run's largest allocation: gone before the evaluation
        callback({"step": self.trainer.step_count, **self.results()})
        return state

    def _between_batches(self) -> bool:
        """Before each collection batch: the thread count, a pause; False once stopped."""
        self.before_work()
        if self.pausing:
            self.wait_while_paused()
        return not self.stopping

    def results(self) -> dict:
        """The evaluation (as the CLI prints it) and the feature statistics of the trained SAE."""
        cfg, sae = self.cfg, self.model
        evaluation = evaluate_sae(self.lm, sae, self.val_ids, cfg.eval_tokens, cfg.window).summary()
        stats = feature_stats(self.lm, sae, self.val_ids[:cfg.stats_tokens], cfg.window)
        return {"eval": evaluation, "outputs": {"evaluation": evaluation, "feature_stats": stats}}


def sae_reporter(run: SAERun, payload: dict, outbox):
    """run()'s callback in the child: the trainer's metrics under the run's keys (its training seconds as
    "elapsed", for the ETA), collection progress and the results as they are."""
    keys = run.metric_keys

    def report(metrics: dict) -> None:
        if "seconds" in metrics:
            metrics = {**{k: metrics[k] for k in keys if k in metrics}, "elapsed": metrics["seconds"]}
        outbox.metrics(metrics)
    return report
