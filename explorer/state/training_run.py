"""One user's training run: a child process (model_core.training.remote) whose messages a daemon thread applies to
the run's one record (`progress`), read by the page's gr.Timer. Also the server-wide training slots: how many runs at
once, how they share the cores, and when an idle run gives its slot back."""
import math
import os
import threading
import time
from typing import Callable, Optional

from explorer.common.controls import LIVE_CAPTION
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from model_core.training.remote import RemoteTrainer, model_job, weights_every
from model_core.training.run_protocol import ChildJob, Command, RunProgress, SetThreads, TrainJob

KILL_AFTER_STOP_SECONDS = 15.0  # a stopped child that has not ended by then is killed
SAMPLES_KEPT = 20  # generated samples a run keeps for its page
WEIGHT_SETS_KEPT = 4  # snapshot weights a run keeps for model B: at most 4 x --max-params x 4 bytes (80 MB)

_slots_lock = threading.Lock()
_active: "set[TrainingRun]" = set()  # runs holding a training slot, across all sessions
_balance_lock = threading.Lock()  # one rebalance at a time, so thread counts reach each child in order


def cores() -> int:
    """The cores this process may use: those it may run on, at most its cgroup's CPU quota (a container's CPU
    limit, as Kubernetes sets for a JupyterHub student's server, is a quota, not fewer cores)."""
    found = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = cgroup_cpu_quota()
    return max(1, min(found, math.ceil(quota))) if quota else found


def cgroup_cpu_quota(path: str = "/sys/fs/cgroup/cpu.max") -> float | None:
    """cgroup v2's CPU limit in cores ("200000 100000": 2.0), or None when there is none ("max") or no file."""
    try:
        quota, period = open(path).read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        return None


def running_count() -> int:
    return len(_active)


def slots_text() -> str:
    return f"{max(0, LIMITS.max_trainers - len(_active))} of {LIMITS.max_trainers} training slots free on this server"


class TrainingRun:
    """Read the run in `progress` (its only record); control it through this object. adopt(run, final) hands the
    session the trained model when the child confirms a pause (a copy: training goes on) or the end. job: a
    model's TrainJob, or any other run of the training child (a ChildJob: an SAE's), under the same slots."""

    def __init__(self, job: "TrainJob | ChildJob", corpus: str, sample_every: int = 100, sample_tokens: int = 120,
                 adopt: Optional[Callable[["TrainingRun", bool], None]] = None):
        if isinstance(job, TrainJob):
            small = job.model.num_params() <= LIMITS.max_params
            every = weights_every(job.cfg, WEIGHT_SETS_KEPT) if small else 0
            job = model_job(job, sample_every, sample_tokens, every, snapshots_kept=LIMITS.snapshots_kept,
                            samples_kept=SAMPLES_KEPT, weight_sets_kept=WEIGHT_SETS_KEPT)
        self.remote = RemoteTrainer(job, on_settled=self._settled)
        self.progress: RunProgress = self.remote.progress
        self.corpus, self.adopt = corpus, adopt
        self.expired: Optional[str] = None  # why the server stopped this run, told to its user
        # (step of the snapshot shown, live attention JSON, its caption), kept by the poller; -1: none shown yet (the
        # step-0 snapshot of the untrained model is shown too)
        self.live_figure: tuple[int, str, str] = (-1, "", LIVE_CAPTION)
        self.last_poll = time.monotonic()
        self.adopted = 0  # step whose weights were adopted last (step 0, the untrained model, never is)
        self.thread = threading.Thread(target=self._main, name="trainer-mirror", daemon=True)

    def start(self) -> "TrainingRun":
        """Take a slot (or refuse, saying when one frees) and start the child."""
        with _slots_lock:
            if len(_active) >= LIMITS.max_trainers:
                raise UserError(busy_message())
            _active.add(self)
            self.progress.threads_told = threads_per_run(len(_running()))  # the child starts with it
        self.thread.start()
        rebalance_threads()
        return self

    @property
    def active(self) -> bool:
        return self.thread.is_alive()

    def control(self, command, now: Optional[float] = None) -> None:
        """Send Command.PAUSE, Command.RESUME or Command.STOP. A paused run leaves its cores to the others; a
        resumed one is told its share before it resumes."""
        self.progress.request(command, time.monotonic() if now is None else now)
        rebalance_threads()
        self.remote.send(command)

    def heartbeat(self) -> None:
        self.last_poll = time.monotonic()

    def seconds_left(self, now: float) -> float:
        """Until this run gives its slot back: the rest of its idle TTL when paused, else its ETA (inf if
        not known yet)."""
        if self.progress.requested == "paused":
            return max(0.0, LIMITS.run_ttl_seconds - (now - self.progress.requested_at))
        return self.progress.eta_seconds()

    def expire_if_idle(self, now: float) -> None:
        """Stop a run that is paused, or whose page stopped polling, for longer than the idle TTL; kill a
        stopped child that does not end."""
        if not self.active:
            return
        p, ttl = self.progress, LIMITS.run_ttl_seconds
        if p.requested == "stopped":
            if now - p.requested_at > KILL_AFTER_STOP_SECONDS:
                self.remote.kill()
            return
        if p.requested == "paused" and now - p.requested_at > ttl:
            self.expired = f"it was paused for more than {ttl / 60:g} minutes"
        elif now - self.last_poll > ttl:
            self.expired = f"its page stopped watching it for more than {ttl / 60:g} minutes"
        else:
            return
        self.control(Command.STOP, now)

    def _main(self) -> None:
        try:
            self.remote.run()
        finally:
            with _slots_lock:
                _active.discard(self)
            rebalance_threads()

    def _settled(self, progress: RunProgress, final: bool) -> None:
        """The child confirmed a pause or the end: a model trained further than the one adopted last is adopted."""
        if self.adopt is not None and progress.step != self.adopted:
            if self.adopt(self, final) is not False:  # an adopter may decline: an SAE is taken only at its end
                self.adopted = progress.step


def threads_per_run(n_runs: int) -> int:
    """Runs that train split the cores between them, never more threads in all than cores: a run whose OpenMP
    team outnumbers the cores it gets waits at every op for a thread that is not running (a second run that
    started on every core beside one on 1 thread trained at 1-5 steps/s, the other at 20-79: bench.trainers).
    The server's analysis wins any contention by priority."""
    return max(1, cores() // max(1, n_runs))


def _running() -> "list[TrainingRun]":
    """Runs holding a slot that are not paused (a paused run's threads sleep, so it needs no share)."""
    return [run for run in _active if run.progress.requested != "paused"]


def rebalance_threads() -> None:
    """Tell every training run its share of the cores, after a run started, ended, paused or resumed."""
    with _balance_lock:
        with _slots_lock:
            runs = _running()
            n = threads_per_run(len(runs))
        for run in runs:
            if run.progress.threads_told != n:
                run.remote.send(SetThreads(n))


def busy_message() -> str:
    n, now = LIMITS.max_trainers, time.monotonic()
    soonest = min((r.seconds_left(now) for r in list(_active)), default=float("inf"))
    when = ("try again in a few minutes" if soonest == float("inf") else
            f"the next one frees in about {soonest / 60:.0f} min" if soonest >= 90 else
            f"the next one frees in about {max(soonest, 1):.0f} s")
    slots = "The training slot" if n == 1 else f"All {n} training slots"
    return (f"{slots} of this server {'is' if n == 1 else 'are'} in use; {when}. Your model and data are "
            "kept: press Start again then.")


def expire_idle_runs(now: Optional[float] = None) -> None:
    now = time.monotonic() if now is None else now
    for run in list(_active):
        run.expire_if_idle(now)
