"""RemoteTrainer: the server's handle on a training child (model_core.training.child). It sends typed commands
(model_core.training.run_protocol) and applies the child's messages to one RunProgress; no Trainer or optimizer
is built in the server.

Why a process: with GNU OpenMP, a second thread that runs torch ops in the same process gets its own
OpenMP team; once a process has more OpenMP threads than CPUs, libgomp stops spinning between parallel
regions and every small op waits on a futex. On 2 cores that made training in a server thread 25-45 %
slower than the CLI. In its own process the training loop runs on a main thread, as fast as the CLI.
Messages child -> server go over one queue; commands server -> child over a pipe."""
import multiprocessing as mp
import os
import queue
import threading
import time
import weakref
from multiprocessing import forkserver
from typing import Callable, Optional

from model_core.training.child import child_main, weights
from model_core.training.process_setup import process_alive
from model_core.training.run_protocol import (
    ChildJob,
    Command,
    Confirmed,
    Done,
    Failed,
    RunProgress,
    SetThreads,
    TrainJob,
)
from model_core.training.trainer import check_trainable

# forkserver: children fork from a clean server that has imported torch but never run an OpenMP region, so
# they start in milliseconds without inheriting the app's threads. The server also imports what a run would
# otherwise import lazily: torch._dynamo (the first optimizer, 1.3 s), model_core.analysis and scikit-learn's
# PCA (the first snapshot's, which pulls in scipy too, 1.5 s). Like spawn, each child re-imports the main module
# (Python 3.11 ignores a "__main__" preload), so a program that trains this way keeps its main module's top
# level light: app.py does.
CONTEXT = mp.get_context("forkserver")
CONTEXT.set_forkserver_preload(["model_core.training.remote", "torch._dynamo", "model_core.analysis", "sklearn.decomposition"])
_live: "weakref.WeakSet[RemoteTrainer]" = weakref.WeakSet()  # every started trainer, for shutdown_all()
_forks = threading.Lock()  # held while a child starts and while an idle forkserver stops: never both at once
_idle_stop_seconds: Optional[float] = None  # stop_forkserver_when_idle()
_last_end = 0.0  # time.monotonic() when the last run ended


class RemoteTrainer:
    """Trains job (a model's TrainJob, or any ChildJob: an SAE's) in a child process; run() blocks, applying the
    child's messages to `progress` until it ends. on_settled(progress, final) runs when the child confirms a pause
    (final False) or the end (True), before progress says so: whoever reads the new state finds the settled model
    already handed over."""

    def __init__(self, job, sample_every: int = 0, sample_tokens: int = 120, threads: int = 0,
                 weights_every: int = 0, on_settled: Optional[Callable[[RunProgress, bool], None]] = None, **kept):
        if isinstance(job, TrainJob):
            job = model_job(job, sample_every, sample_tokens, weights_every, **kept)
        self.progress = job.progress
        self.progress.threads_told = threads
        self.on_settled = on_settled
        self.messages = CONTEXT.Queue()
        self.commands, child_commands = CONTEXT.Pipe()
        self.job = {**job.payload, "parent_pid": os.getpid()}  # what the child gets as it starts (run())
        self.process = CONTEXT.Process(target=child_main, daemon=True, name="trainer",
                                       args=(self.job, child_commands, self.messages))
        self._send_lock = threading.Lock()

    # ------------------------------------------------------------------ commands (any thread)
    def send(self, command) -> None:
        """Send Command.PAUSE, Command.RESUME, Command.STOP or SetThreads(n) (run_protocol); a finished child is not told."""
        with self._send_lock:
            if isinstance(command, SetThreads):
                self.progress.threads_told = command.n
            try:
                self.commands.send(command)
            except (BrokenPipeError, OSError):  # the child has already finished
                pass

    def kill(self) -> None:
        """End the child now, without waiting for a step to finish (shutdown, expired runs that hang)."""
        if self.process.pid is not None and self.process.is_alive():
            self.process.kill()

    # ------------------------------------------------------------------ messages
    def run(self) -> str:
        """Start the child and apply its messages until it ends; -> the final state (progress.error says why
        when it is "error")."""
        self.progress.state = "running"
        # the thread count as of now: whoever starts the run may have set it since this object was built (a
        # child that started on torch's default, every core, beside another run was the 79 vs 5 steps/s case)
        self.job["threads"] = self.progress.threads_told
        try:
            with _forks:
                self.process.start()
                _live.add(self)
            self.job = None  # its copy of the weights went to the child
            while not self.receive(self.next_message()):
                pass
        except Exception as err:  # noqa: BLE001 - told to the user as the run's error, never raised into the server
            self.progress.apply(Failed(str(err)))
        finally:
            self.commands.close()
            if self.process.pid is not None:
                self.process.join(timeout=5)
                self.kill()
            _live.discard(self)
            _ended()
        return self.progress.state

    def next_message(self):
        while True:
            try:
                return self.messages.get(timeout=0.5)
            except queue.Empty:
                if not self.process.is_alive():
                    return Failed(f"the training process ended unexpectedly (exit code {self.process.exitcode}); "
                                  "start the run again.")

    def receive(self, message) -> bool:
        """Apply one message of the child; -> whether the run is over."""
        settled = isinstance(message, Done) or (message == Confirmed("paused"))
        if settled and self.on_settled is not None:
            self.on_settled(self.progress, isinstance(message, Done))
        self.progress.apply(message)
        return isinstance(message, (Done, Failed))


def model_job(job: TrainJob, sample_every: int = 0, sample_tokens: int = 120, weights_every: int = 0,
              **kept) -> ChildJob:
    """A model's training run as the child gets it; weights_every: every k-th snapshot (and the last) brings
    weights. kept: RunProgress's limits (snapshots_kept, samples_kept, weight_sets_kept)."""
    check_trainable(job.model, job.train_data, job.val_data, job.cfg)  # a clear error now, not from the child
    progress = RunProgress(job.model, job.cfg, job.tokenizer, has_val=job.val_data is not None, **kept)
    val = None if job.val_data is None else job.val_data.numpy()
    payload = dict(model_config=job.model.cfg.to_dict(), weights=weights(job.model), train=job.train_data.numpy(),
                   val=val, cfg=job.cfg, tokenizer=None if job.tokenizer is None else job.tokenizer.to_dict(),
                   sample_every=sample_every, sample_tokens=sample_tokens, weights_every=weights_every)
    return ChildJob(progress, payload)


def weights_every(cfg, sets: int) -> int:
    """Every how many snapshots the child sends its weights, for about `sets` sets spread over the whole run
    (the server thins what arrives): a copy of the weights costs the training loop a few milliseconds."""
    if not cfg.snapshot_interval:
        return 0
    return max(1, cfg.max_steps // cfg.snapshot_interval // sets)


def start_forkserver() -> None:
    """Start the forkserver now, in the background (its preloads take seconds): the app's warm-up calls this, so
    a class's first Start does not wait for torch to import."""
    forkserver.ensure_running()


def stop_forkserver_when_idle(seconds: float) -> None:
    """For a server that serves one person (a JupyterHub student's): the forkserver preloads only the trainer (1.9
    instead of 5.3 CPU-s, 230 instead of 450 MB: a child imports the rest if it needs it), and it stops once no run
    has used it for `seconds` (the next run starts it again, seconds later). Call before the first run."""
    global _idle_stop_seconds
    _idle_stop_seconds = seconds
    CONTEXT.set_forkserver_preload(["model_core.training.remote"])


def _ended() -> None:
    global _last_end
    _last_end = time.monotonic()
    if _idle_stop_seconds is not None:
        timer = threading.Timer(_idle_stop_seconds, _stop_if_idle)
        timer.daemon = True
        timer.start()


def _stop_if_idle() -> None:
    with _forks:
        if _idle_stop_seconds is not None and not _live and time.monotonic() - _last_end >= 0.99 * _idle_stop_seconds:
            forkserver._forkserver._stop()


# ---------------------------------------------------------------- shutdown

def shutdown_all(timeout: float = 3.0) -> None:
    """End every training child of this process and the forkserver (app shutdown: SIGTERM, SIGINT)."""
    for remote in list(_live):
        remote.send(Command.STOP)
    deadline = time.monotonic() + timeout
    for remote in list(_live):
        remote.process.join(max(0.0, deadline - time.monotonic()))
        remote.kill()
    stop_forkserver()


def stop_forkserver() -> None:
    """Kill the forkserver if this process started one (it would exit on its own when we do, but a
    SIGTERM'd app should leave nothing behind even for a moment)."""
    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid and process_alive(pid):
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
