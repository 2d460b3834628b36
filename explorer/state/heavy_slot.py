"""The heavy slot: seconds-long analyses (activation patching, ablation and the importance map, direct logit
attribution, model B) run one at a time, so they never hold up the light views. Taking turns fairly:

- the job that has run least goes first (least attained service): a running job gives way between two of its
  batches (model_core.analysis.interruptible), once its turn has lasted SLICE_SECONDS, to a waiting job that has
  run less than it. A bystander's request therefore waits about one slice, then runs until it has had as much
  time as the long job ahead of it: a short job is served at once, never behind a whole long job;
- one job per session: a session's newer heavy request stops its older one, running or waiting;
- at most PER_ADDRESS jobs per client address, waiting or running; more are refused at once with a sentence;
- a job stops when its client has gone (the page closed, the script ended) or after MAX_RUN_SECONDS of its turns.

Each job was bounded before it was admitted (explorer.callbacks.work_budget), so a turn always ends."""
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Optional

from explorer.common.errors import UserError
from model_core.analysis.interruptible import interruptible

SLICE_SECONDS = 0.5  # a job's turn before it gives way to a waiting one (between two batches)
PER_ADDRESS = 3  # heavy jobs one client address may have waiting or running
MAX_RUN_SECONDS = 60.0  # a job's turns together; longer only on a server far busier than its estimate assumed
POLL_SECONDS = 0.5  # how often a waiting job looks whether it was stopped or its client has gone

NEWER = "Stopped: you asked for something newer, which runs instead."
GONE = "Stopped: the page or script that asked for it has gone."
TOO_LONG = (f"Stopped after {MAX_RUN_SECONDS:.0f} s of work: the server is busier than usual. Try again in a while, "
            "or ask for less (shorter prompts, fewer tokens).")


@dataclass(eq=False)
class Job:
    session: object  # the Session asking (one job per session)
    address: str  # the client's address ('' when unknown)
    client_gone: Callable[[], bool] = lambda: False
    stopped: Optional[str] = None  # why it must stop, once it must
    ran: float = 0.0  # seconds of its earlier turns
    turn_began: Optional[float] = None


class HeavySlot:
    def __init__(self, slice_seconds: float = SLICE_SECONDS, per_address: int = PER_ADDRESS,
                 max_run_seconds: float = MAX_RUN_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.slice_seconds, self.per_address, self.max_run_seconds = slice_seconds, per_address, max_run_seconds
        self.clock = clock
        self._cond = threading.Condition()
        self._waiting: list[Job] = []  # in turn order
        self._running: Optional[Job] = None
        self._jobs: list[Job] = []  # every admitted job, waiting or running
        self.gave_way = 0  # turns given to a waiting job so far

    @contextmanager
    def turn(self, job: Job):
        """Admit job, wait for its turn, run the block; within it, between_batches() may give way or stop."""
        self._admit(job)
        try:
            with self._cond:
                self._wait_for_turn(job)
            with interruptible(lambda: self._between_batches(job)):
                yield
        finally:
            self._leave(job)

    def _admit(self, job: Job) -> None:
        with self._cond:
            older = [j for j in self._jobs if j.session is job.session and j.stopped is None]
            others = [j for j in self._jobs if j.address == job.address and j.stopped is None and j not in older]
            if job.address and len(others) >= self.per_address:
                raise UserError(f"Your address already has {len(others)} long analyses running or waiting (at most "
                                f"{self.per_address} at once): wait for one to finish, then ask again.")
            for earlier in older:
                earlier.stopped = NEWER
            self._jobs.append(job)
            self._waiting.append(job)
            self._cond.notify_all()

    def _next(self) -> Optional[Job]:
        """The waiting job that has run least (the earliest of equals)."""
        return min(self._waiting, key=lambda j: j.ran, default=None)

    def _wait_for_turn(self, job: Job) -> None:
        """(holding the condition) until job runs; a stopped job, or one whose client has gone, raises."""
        while self._running is not None or self._next() is not job:
            self._raise_if_stopped(job)
            self._cond.wait(POLL_SECONDS)
        self._raise_if_stopped(job)
        self._waiting.remove(job)
        self._running, job.turn_began = job, self.clock()

    def _raise_if_stopped(self, job: Job) -> None:
        if job.stopped is None and job.client_gone():
            job.stopped = GONE
        if job.stopped is not None:
            raise UserError(job.stopped)

    def _between_batches(self, job: Job) -> None:
        now = self.clock()
        if job.ran + now - job.turn_began > self.max_run_seconds:
            job.stopped = job.stopped or TOO_LONG
        self._raise_if_stopped(job)
        with self._cond:
            waiting, turn = self._next(), now - job.turn_began
            if turn < self.slice_seconds or waiting is None or waiting.ran >= job.ran + turn:
                return
            job.ran += turn
            self._running = None
            self._waiting.append(job)
            self.gave_way += 1
            self._cond.notify_all()
            self._wait_for_turn(job)

    def _leave(self, job: Job) -> None:
        with self._cond:
            if self._running is job:
                self._running = None
            if job in self._waiting:
                self._waiting.remove(job)
            self._jobs.remove(job)
            self._cond.notify_all()

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)


HEAVY_SLOT = HeavySlot()
