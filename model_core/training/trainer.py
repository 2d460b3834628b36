"""Trainer: AdamW or Muon, warmup + cosine schedule, clipping, periodic evaluation and snapshots;
bf16 autocast, and data-parallel over torchrun processes (model_core.training.distributed).

Knows nothing about GPT internals beyond model(x, y) -> (logits, loss); progress goes to a callback.
pause() / resume() / stop() (RunControl) may be called from another thread while run() trains."""
import math
import time
from typing import Callable, Optional

import torch

from model_core.analysis.progress import progress_measures
from model_core.data.dataset import check_long_enough, get_batch
from model_core.training.distributed import check_batch_splits, current_world, wrap_for_training
from model_core.training.optim import make_optimizer, param_groups  # noqa: F401  (param_groups: part of this module's API)
from model_core.training.precision import autocast, check_precision, enable_fast_matmul
from model_core.training.run_control import RunControl
from model_core.training.snapshots import PROBE_MAX_TOKENS, Snapshot, take_snapshot
from model_core.training.train_config import TrainConfig, TrainConfigError


class TrainingError(RuntimeError):
    """Training cannot go on (e.g. the loss blew up); the message says what to try."""


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    """'auto' -> cuda, else mps, else cpu; an explicit device must exist. CUDA picks GPU local_rank."""
    cuda = torch.cuda.is_available()
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if name == "auto":
        name = "cuda" if cuda else "mps" if mps else "cpu"
    if (name == "cuda" and not cuda) or (name == "mps" and not mps):
        raise TrainConfigError(f"device {name!r} is not available on this machine: use 'cpu' or 'auto'.")
    return torch.device("cuda", local_rank) if name == "cuda" else torch.device(name)


def lr_at(step: int, cfg: TrainConfig, time_fraction: Optional[float] = None) -> float:
    """Linear warmup to cfg.lr, then cosine decay to cfg.final_lr at cfg.max_steps (nanoGPT's schedule).

    time_fraction is the share of a time budget already used; when it is ahead of the step count the
    cosine follows it instead, so a run cut short by max_seconds still ends at a low learning rate."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / (cfg.warmup_steps + 1)
    progress = (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps)
    if time_fraction is not None:
        progress = max(progress, time_fraction)
    if progress >= 1:
        return cfg.final_lr
    return cfg.final_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (cfg.lr - cfg.final_lr)


# Steps evaluated before the first eval_interval: a class sees its run learn within seconds, not after 200 steps
# (at step 140 of the classroom preset the only validation loss was still the untrained model's).
EARLY_EVALS = (10, 25, 50, 100)


def evaluation_due(step: int, interval: int) -> bool:
    """Evaluate after `step` steps? Every `interval` steps (0: never), and at the EARLY_EVALS below the first."""
    return bool(interval) and (step % interval == 0 or (step < interval and step in EARLY_EVALS))


def next_evaluation(step: int, interval: int) -> Optional[int]:
    """The first step after `step` that evaluation_due names; None when evaluation is off."""
    if not interval:
        return None
    return next((s for s in EARLY_EVALS if step < s < interval), (step // interval + 1) * interval)


FROZEN_MODEL = ("this model is frozen (a pretrained model, shared read-only): it is inspected, never trained; "
                "train a model built from a config instead.")


def check_trainable(model, train_data: torch.Tensor, val_data: Optional[torch.Tensor], cfg: TrainConfig,
                    world=None) -> torch.device:
    """Raise a clear error when this model cannot train on this data with cfg here; -> the device it would use.
    (The app asks before it starts a training child, which would otherwise only report the error.)"""
    if getattr(model, "frozen", False):  # GPT.freeze(): a pretrained model shared read-only, never trained
        raise ValueError(FROZEN_MODEL)
    check_long_enough(train_data, model.cfg.block_size, "training")
    if val_data is not None:
        check_long_enough(val_data, model.cfg.block_size, "validation")
    world = world or current_world()
    check_batch_splits(cfg.batch_size, world)
    device = resolve_device(cfg.device, world.local_rank)
    check_precision(device, cfg.precision, cfg.compile)
    return device


class Trainer(RunControl):
    def __init__(self, model, train_data: torch.Tensor, val_data: Optional[torch.Tensor], cfg: TrainConfig,
                 tokenizer=None):
        super().__init__()
        self.cfg, self.tokenizer = cfg, tokenizer
        self.block_size = model.cfg.block_size
        self.world = current_world()
        self.device = check_trainable(model, train_data, val_data, cfg, self.world)
        enable_fast_matmul(self.device)
        self.model = model.to(self.device)
        self.train_data, self.val_data = train_data, val_data  # any integer dtype: get_batch makes int64 batches
        # Dropout draws from torch's global RNG; keep our own copy of its state so that runs of
        # different trainers in turn do not disturb each other. (The model's init is seeded by its builder.)
        self.rng_state = torch.Generator().manual_seed(cfg.seed).get_state()
        self.generator = torch.Generator().manual_seed(cfg.seed)  # training batches
        self.optimizer = make_optimizer(self.model, cfg, self.device)
        self.params = [p for g in self.optimizer.param_groups for p in g["params"]]
        # What the training step calls: the model itself, or DDP around it, compiled on request (CUDA).
        # Evaluation and snapshots call self.model: no gradient sync, no recompiles for hooks.
        self.train_model = wrap_for_training(self.model, self.world, self.device)
        if cfg.compile:
            self.train_model = torch.compile(self.train_model)
        self.probe_ids = self.probe()
        self.step_count, self.elapsed = 0, 0.0
        self.budget: Optional[tuple[float, float]] = None  # (deadline, seconds) while run() has max_seconds
        self.history: list[dict] = []  # one metrics dict per step
        self.evals: list[dict] = []  # {step, train_loss, val_loss}
        self.snapshots: list[Snapshot] = []
        self.state = "idle"  # then running, paused, stopped, finished or error

    # ------------------------------------------------------------------ one step
    def step(self, time_fraction: Optional[float] = None) -> dict:
        """One optimisation step on a fresh batch; returns its metrics. time_fraction: see lr_at (run()
        passes the one all processes agreed on; default: this process's clock)."""
        self.before_work()
        start = time.perf_counter()
        fraction = self.time_fraction() if time_fraction is None else time_fraction
        lr = lr_at(self.step_count, self.cfg, fraction)
        for group in self.optimizer.param_groups:  # every group keeps its own peak, scaled alike
            group["lr"] = group.get("base_lr", self.cfg.lr) * lr / self.cfg.lr
        # Every process draws the same global batch and trains on its slice of it.
        x, y = get_batch(self.train_data, self.block_size, self.cfg.batch_size, self.generator)
        x, y = self.world.shard(x), self.world.shard(y)
        x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
        with autocast(self.device, self.cfg.precision):
            _, loss = self.train_model(x, y)
        loss.backward()
        loss = self.world.mean(loss.detach())  # the loss of the global batch
        if self.cfg.grad_clip > 0:
            norm = torch.nn.utils.clip_grad_norm_(self.params, self.cfg.grad_clip)
            loss_value, grad_norm = torch.stack((loss.float(), norm.float())).tolist()  # one sync
        else:
            loss_value, grad_norm = loss.item(), None
        if not math.isfinite(loss_value):
            self.optimizer.zero_grad(set_to_none=True)
            raise TrainingError(
                f"the loss became {loss_value} at step {self.step_count + 1}, so training stopped. "
                f"Try a lower learning rate (now {lr:.3g}), gradient clipping (grad_clip=1.0) "
                "or a norm layer (norm='layernorm')."
            )
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        seconds = time.perf_counter() - start
        self.step_count += 1
        self.elapsed += seconds
        metrics = {
            "step": self.step_count, "loss": loss_value, "lr": lr, "grad_norm": grad_norm,
            "tokens_per_sec": x.numel() * self.world.size / seconds if seconds > 0 else 0.0, "elapsed": self.elapsed,
        }
        self.history.append(metrics)
        return metrics

    def time_fraction(self) -> Optional[float]:
        """Share of run()'s max_seconds used so far (time spent paused excluded); None without a limit."""
        if self.budget is None:
            return None
        deadline, seconds = self.budget
        return 1.0 - (deadline - time.perf_counter()) / seconds

    # ------------------------------------------------------------------ evaluation and snapshots
    @torch.inference_mode()
    def evaluate(self) -> dict:
        """Mean loss over eval_iters batches of each split (same batches every time); appended to evals."""
        was_training = self.model.training
        self.model.eval()
        try:
            result = {"step": self.step_count}
            for split, data in (("train", self.train_data), ("val", self.val_data)):
                result[f"{split}_loss"] = None if data is None else self.mean_loss(data)
            if self.cfg.measure_progress:  # induction, composition, accuracy...: on the evaluation schedule
                result.update(progress_measures(self.model, self.train_data, self.val_data, self.cfg.task))
        finally:
            self.model.train(was_training)
        self.evals.append(result)
        return result

    def mean_loss(self, data: torch.Tensor) -> float:
        generator = torch.Generator().manual_seed(self.cfg.seed + 1)
        total = torch.zeros((), device=self.device)
        for _ in range(self.cfg.eval_iters):
            self.before_work()
            x, y = get_batch(data, self.block_size, self.cfg.batch_size, generator)
            with autocast(self.device, self.cfg.precision):
                total += self.model(x.to(self.device), y.to(self.device))[1].float()
        return total.item() / self.cfg.eval_iters

    def probe(self) -> list[int]:
        """Token ids of the snapshot prompt: cfg.probe_text if given, else the start of the validation text."""
        if self.cfg.probe_text and self.tokenizer is not None:
            ids = self.tokenizer.encode(self.tokenizer.strip_unknown(self.cfg.probe_text))
            if ids:
                return ids[: self.block_size]
        source = self.val_data if self.val_data is not None else self.train_data
        if source.dim() == 3:  # examples of a task: the first one's input
            return source[0, 0].tolist()
        return source[: min(self.block_size, PROBE_MAX_TOKENS)].tolist()

    def snapshot(self) -> Snapshot:
        """Snapshot now, with the losses of an evaluation at this step if there was one."""
        latest = self.evals[-1] if self.evals and self.evals[-1]["step"] == self.step_count else None
        if latest:
            train_loss, val_loss = latest["train_loss"], latest["val_loss"]
        else:
            train_loss, val_loss = (self.history[-1]["loss"] if self.history else None), None
        progress = {k: v for k, v in (latest or {}).items() if k not in ("step", "train_loss", "val_loss")}
        snap = take_snapshot(self.model, self.probe_ids, self.step_count, train_loss, val_loss, progress)
        self.snapshots.append(snap)
        return snap

    # ------------------------------------------------------------------ the loop
    def run(self, max_steps: Optional[int] = None, max_seconds: Optional[float] = None,
            callback: Optional[Callable[[dict], None]] = None) -> str:
        """Train until max_steps total steps (default cfg.max_steps), max_seconds, or stop(); returns the
        final state. callback(metrics) runs after every step; metrics gain 'eval' / 'snapshot' entries
        on the steps that have them. With max_seconds the lr schedule also ends when the time does."""
        if self.state in ("running", "paused"):
            raise TrainingError("this trainer is already running; pause(), resume() or stop() it instead.")
        target = self.cfg.max_steps if max_steps is None else max_steps
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        self.budget = None if deadline is None else (deadline, max_seconds)
        self.state = "running"
        self.model.train()
        torch.random.set_rng_state(self.rng_state)
        try:
            self.checkpoint_extras(None, callback, force=self.step_count == 0)
            while self.step_count < target:
                stop, fraction = self.agreed_control(deadline)
                if stop:
                    break
                if self.pausing:
                    parked = self.wait_while_paused()  # the time budget excludes the time spent paused
                    deadline = None if deadline is None else deadline + parked
                    self.budget = None if deadline is None else (deadline, max_seconds)
                    continue
                metrics = self.step(fraction)
                # the last step evaluates and snapshots together (else a snapshot due then would lack its losses)
                self.checkpoint_extras(metrics, callback, force=self.step_count >= target)
            stopped = self.stopping
            # A stop answers at once: a final snapshot but no final evaluation (seconds on a large model).
            self.checkpoint_extras(None, callback, force=True, evaluate=not stopped)
            self.state = "stopped" if stopped else "finished"
        except BaseException:
            self.state = "error"
            raise
        finally:
            self.rng_state = torch.random.get_rng_state()
            self.budget = None
            self.stop_acknowledged()  # once run() returns
        return self.state

    def agreed_control(self, deadline: Optional[float]) -> tuple[bool, Optional[float]]:
        """(stop now?, share of the time budget used), agreed by all processes: one stopping stops all
        (so none waits forever for the others' gradients) and all follow the latest clock's schedule."""
        stop = self.stopping or (deadline is not None and time.perf_counter() >= deadline)
        fraction = self.time_fraction()
        if self.world.size == 1:
            return stop, fraction
        stop_any, latest = self.world.max([float(stop), -1.0 if fraction is None else fraction])
        return stop_any > 0, None if fraction is None else latest

    def checkpoint_extras(self, metrics: Optional[dict], callback, force: bool = False,
                          evaluate: bool = True) -> None:
        """Evaluate when due (evaluation_due), snapshot every snapshot_interval and with each evaluation (live views
        refresh with the numbers), or both when forced (start and end), unless their interval is 0 (off) or they
        were already done at this step; then the callback."""
        step, cfg = self.step_count, self.cfg
        extras = {}
        if not self.world.is_main:  # rank 0 evaluates, snapshots and reports for everyone
            return
        if evaluate and cfg.eval_interval and (force or evaluation_due(step, cfg.eval_interval)):
            if not self.evals or self.evals[-1]["step"] != step:
                extras["eval"] = self.evaluate()
        if cfg.snapshot_interval and (force or step % cfg.snapshot_interval == 0 or "eval" in extras):
            if not self.snapshots or self.snapshots[-1].step != step:
                extras["snapshot"] = self.snapshot()
        if callback is not None and (metrics is not None or extras):
            callback({**(metrics or {"step": step}), **extras})
