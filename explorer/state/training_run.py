"""One user's training run: a child process (model_core.training.remote) mirrored by a daemon thread, polled
by the page's gr.Timer. Also the server-wide training slots: how many runs at once, how they share the cores, and
when an idle run gives its slot back."""
import os
import threading
import time
from typing import Optional

import torch

from explorer.common.controls import LIVE_CAPTION
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from model_core.training.remote import RemoteTrainer, weights_every
from model_core.training.trainer import Trainer

KILL_AFTER_STOP_SECONDS = 15.0  # a stopped child that has not ended by then is killed
SAMPLES_KEPT = 20  # generated samples a run keeps for its page
WEIGHT_SETS_KEPT = 4  # snapshot weights a run keeps for model B: at most 4 x --max-params x 4 bytes (80 MB)

_slots_lock = threading.Lock()
_active: "set[TrainingRun]" = set()  # runs holding a training slot, across all sessions
_balance_lock = threading.Lock()  # one rebalance at a time, so thread counts reach each child in order


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def running_count() -> int:
    return len(_active)


def free_slots() -> int:
    return max(0, LIMITS.max_trainers - len(_active))


def slots_text() -> str:
    return f"{free_slots()} of {LIMITS.max_trainers} training slots free on this server"


class TrainingRun:
    """`trainer` is the local mirror: read it, control the run through this object."""

    def __init__(self, trainer: Trainer, corpus: str, sample_every: int = 100, sample_tokens: int = 120):
        self.trainer, self.corpus = trainer, corpus
        small = trainer.model.num_params() <= LIMITS.max_params
        self.remote = RemoteTrainer(trainer, sample_every, sample_tokens,
                                    weights_every=weights_every(trainer.cfg, WEIGHT_SETS_KEPT) if small else 0)
        self.snapshot_weights: list[tuple[int, dict]] = []  # (step, state_dict) of a few snapshots, for model B
        self.samples: list[tuple[int, str]] = []  # (step, generated text)
        self.error: Optional[str] = None
        self.expired: Optional[str] = None  # why the server stopped this run, told to its user
        # (step of the snapshot shown, live attention JSON, its caption), kept by the poller; -1: none shown yet (the
        # step-0 snapshot of the untrained model is shown too)
        self.live_figure: tuple[int, str, str] = (-1, "", LIVE_CAPTION)
        self.last_poll = self.last_action = time.monotonic()
        self.paused_at: Optional[float] = None
        self.stop_requested_at: Optional[float] = None
        self.adopted = -1  # step whose weights the session adopted last
        self.thread = threading.Thread(target=self._main, name="trainer-mirror", daemon=True)

    def start(self) -> "TrainingRun":
        """Take a slot (or refuse, saying when one frees) and start the child."""
        with _slots_lock:
            if len(_active) >= LIMITS.max_trainers:
                raise UserError(busy_message())
            _active.add(self)
            self.remote.threads = threads_per_run(len(_running()))  # the child starts with it (RemoteTrainer.run)
        self.thread.start()
        rebalance_threads()
        return self

    @property
    def state(self) -> str:
        return "error" if self.error else self.trainer.state

    @property
    def active(self) -> bool:
        return self.thread.is_alive()

    def control(self, action: str) -> None:
        """pause, resume or stop the child's training. A paused run leaves its cores to the others; a resumed one
        is told its share before it resumes."""
        now = time.monotonic()
        self.last_action = now
        self.paused_at = now if action == "pause" else (None if action == "resume" else self.paused_at)
        if action == "stop":
            self.stop_requested_at = now
        rebalance_threads()
        getattr(self.remote, action)()

    def heartbeat(self) -> None:
        self.last_poll = time.monotonic()

    def seconds_left(self, now: float) -> float:
        """Until this run gives its slot back: the rest of its idle TTL when paused, else its ETA (inf if
        not known yet)."""
        if self.paused_at is not None:
            return max(0.0, LIMITS.run_ttl_seconds - (now - max(self.paused_at, self.last_action)))
        t, history = self.trainer, self.trainer.history[-20:]
        span = history[-1]["elapsed"] - history[0]["elapsed"] if len(history) > 1 else 0.0
        rate = (len(history) - 1) / span if span > 0 else 0.0
        return (t.cfg.max_steps - t.step_count) / rate if rate else float("inf")

    def expire_if_idle(self, now: float) -> None:
        """Stop a run that is paused, or whose page stopped polling, for longer than the idle TTL; kill a
        stopped child that does not end."""
        if not self.active:
            return
        if self.stop_requested_at is not None:
            if now - self.stop_requested_at > KILL_AFTER_STOP_SECONDS:
                self.remote.kill()
            return
        ttl = LIMITS.run_ttl_seconds
        if self.paused_at is not None and now - max(self.paused_at, self.last_action) > ttl:
            self.expired = f"it was paused for more than {ttl / 60:g} minutes"
        elif now - self.last_poll > ttl:
            self.expired = f"its page stopped watching it for more than {ttl / 60:g} minutes"
        else:
            return
        self.control("stop")

    def _main(self) -> None:
        try:
            self.remote.run(callback=self._after_step)
        except Exception as err:  # noqa: BLE001 - reported to the page, never raised into the server
            self.error = str(err)
        finally:
            with _slots_lock:
                _active.discard(self)
            rebalance_threads()

    def _after_step(self, metrics: dict) -> None:
        if "sample" in metrics:
            self.samples.append((metrics.get("step", 0), metrics["sample"]))
            del self.samples[:-SAMPLES_KEPT]
        if "snapshot" in metrics:
            thin(self.trainer.snapshots, LIMITS.snapshots_kept)
        if "weights" in metrics:
            state = {k: torch.from_numpy(v) for k, v in metrics.pop("weights").items()}
            self.snapshot_weights.append((metrics.get("step", 0), state))
            thin(self.snapshot_weights, WEIGHT_SETS_KEPT)


def thin(snapshots: list, keep: int) -> None:
    """Past `keep` snapshots, drop every second one (the first and the newest stay): the kept ones stay
    spread over the whole run and memory stays bounded however long it trains."""
    if len(snapshots) > keep:
        snapshots[:] = snapshots[:-1:2] + snapshots[-1:]


def threads_per_run(n_runs: int) -> int:
    """Runs that train split the cores between them, never more threads in all than cores: a run whose OpenMP
    team outnumbers the cores it gets waits at every op for a thread that is not running (a second run that
    started on every core beside one on 1 thread trained at 1-5 steps/s, the other at 20-79: bench.trainers).
    The server's analysis wins any contention by priority."""
    return max(1, cores() // max(1, n_runs))


def _running() -> "list[TrainingRun]":
    """Runs holding a slot that are not paused (a paused run's threads sleep, so it needs no share)."""
    return [run for run in _active if run.paused_at is None]


def rebalance_threads() -> None:
    """Tell every training run its share of the cores, after a run started, ended, paused or resumed."""
    with _balance_lock:
        with _slots_lock:
            runs = _running()
            n = threads_per_run(len(runs))
        for run in runs:
            if run.remote.threads != n:
                run.remote.set_threads(n)


def busy_message() -> str:
    n, now = LIMITS.max_trainers, time.monotonic()
    soonest = min((r.seconds_left(now) for r in list(_active)), default=float("inf"))
    when = ("try again in a few minutes" if soonest == float("inf") else
            f"the next one frees in about {soonest / 60:.0f} min" if soonest >= 90 else
            f"the next one frees in about {max(soonest, 1):.0f} s")
    slots = "The training slot" if n == 1 else f"All {n} training slots"
    return (f"{slots} of this server {'is' if n == 1 else 'are'} in use; {when}. Your model and data are "
            "kept: press Start again then.")


def expire_idle_runs() -> None:
    now = time.monotonic()
    for run in list(_active):
        run.expire_if_idle(now)
