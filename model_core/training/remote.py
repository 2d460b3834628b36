"""RemoteTrainer: a Trainer whose steps run in a child process, mirrored into a local Trainer.

Why a process: with GNU OpenMP, a second thread that runs torch ops in the same process gets its own
OpenMP team; once a process has more OpenMP threads than CPUs, libgomp stops spinning between parallel
regions and every small op waits on a futex. On 2 cores that made training in a server thread 25-45 %
slower than the CLI. In its own process the training loop runs on a main thread, as fast as the CLI.

The local Trainer (built as usual, never stepped) is the mirror: its history, evals, snapshots, step_count,
state and (when paused or done) model weights follow the child, so code that reads a Trainer reads this.
Messages child -> parent go over one queue; commands parent -> child over a pipe."""
import multiprocessing as mp
import os
import queue
import threading
import time
import traceback
import weakref
from typing import Callable, Optional

import torch

from model_core.data.tokenization import tokenizer_from_dict
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from model_core.model.sampling import generate
from model_core.training.process_setup import prepare_child, process_alive
from model_core.training.trainer import Trainer, TrainingError

# forkserver: children fork from a clean server that has imported torch but never run an OpenMP region, so
# they start in milliseconds without inheriting the app's threads. The server also imports what a run would
# otherwise import lazily: torch._dynamo (the first optimizer, 1.3 s), model_core.analysis and scikit-learn's
# PCA (the first snapshot's, which pulls in scipy too, 1.5 s). Like spawn, each child re-imports the main module
# (Python 3.11 ignores a "__main__" preload), so a program that trains this way keeps its main module's top
# level light: app.py does.
CONTEXT = mp.get_context("forkserver")
CONTEXT.set_forkserver_preload(["model_core.training.remote", "torch._dynamo", "model_core.analysis", "sklearn.decomposition"])
METRIC_KEYS = ("step", "loss", "lr", "grad_norm", "tokens_per_sec", "elapsed")
FLUSH_SECONDS = 0.25  # step metrics travel in batches at most this old (the page polls once a second)
CHILD_NICE = 10  # training yields the CPU to interactive work (analysis in the server) when both want it
_live: "weakref.WeakSet[RemoteTrainer]" = weakref.WeakSet()  # every started trainer, for shutdown_all()


def sample_text(model, tokenizer, start: list[int], n_tokens: int) -> str:
    """A short seeded generation from `start`, as the model is right now."""
    ids = [s.token for s in generate(model, start, n_tokens, temperature=0.8, seed=0)]
    return tokenizer.decode(start + ids) if tokenizer is not None else str(start + ids)


class RemoteTrainer:
    """Runs `local`'s training in a child process; run() blocks, mirroring progress into `local`."""

    def __init__(self, local: Trainer, sample_every: int = 0, sample_tokens: int = 120, threads: int = 0,
                 weights_every: int = 0):
        self.local, self.sample_every, self.sample_tokens = local, sample_every, sample_tokens
        self.threads = threads  # torch threads in the child; 0 = torch's default (one per core)
        self.child_threads = 0  # torch threads the child says it runs with (0: not started yet)
        self.weights_every = weights_every  # every k-th snapshot (and the last) brings metrics["weights"]; 0: none
        self.messages = CONTEXT.Queue()
        self.commands, child_commands = CONTEXT.Pipe()
        self._job = self.job()  # sent when the child starts (run())
        self.process = CONTEXT.Process(target=child_main, daemon=True, name="trainer",
                                       args=(self._job, child_commands, self.messages))
        self._send_lock = threading.Lock()

    def job(self) -> dict:
        t = self.local
        val = None if t.val_data is None else t.val_data.numpy()
        return dict(model_config=t.model.cfg.to_dict(), weights=weights(t), train=t.train_data.numpy(), val=val,
                    cfg=t.cfg, tokenizer=None if t.tokenizer is None else t.tokenizer.to_dict(),
                    sample_every=self.sample_every, sample_tokens=self.sample_tokens, threads=self.threads,
                    weights_every=self.weights_every, parent_pid=os.getpid())

    # ------------------------------------------------------------------ control (any thread)
    def pause(self) -> None:
        self.send("pause")

    def resume(self) -> None:
        self.send("resume")

    def stop(self) -> None:
        self.send("stop")

    def set_threads(self, n: int) -> None:
        """Use n torch threads from the next step on (when the number of runs sharing the CPU changes)."""
        self.threads = n
        self.send(f"threads {int(n)}")

    def kill(self) -> None:
        """End the child now, without waiting for a step to finish (shutdown, expired runs that hang)."""
        if self.process.pid is not None and self.process.is_alive():
            self.process.kill()

    def send(self, command: str) -> None:
        with self._send_lock:
            try:
                self.commands.send(command)
            except (BrokenPipeError, OSError):  # the child has already finished
                pass

    # ------------------------------------------------------------------ the mirror
    def run(self, callback: Optional[Callable[[dict], None]] = None) -> str:
        """Start the child and mirror it until it ends; callback(metrics) as Trainer.run would call it."""
        self.local.state = "running"
        # the thread count as of now: whoever starts the run may have set it since this object was built (a
        # child that started on torch's default, every core, beside another run was the 79 vs 5 steps/s case)
        self._job["threads"] = self.threads
        self.process.start()
        self._job = None  # its copy of the weights went to the child
        _live.add(self)
        try:
            while True:
                try:
                    kind, payload = self.messages.get(timeout=0.5)
                except queue.Empty:
                    if not self.process.is_alive():
                        raise TrainingError(f"the training process ended unexpectedly (exit code "
                                            f"{self.process.exitcode}); start the run again.") from None
                    continue
                if kind == "metrics":
                    for metrics in payload:
                        self.mirror(metrics)
                        if callback is not None:
                            callback(metrics)
                elif kind == "weights":
                    self.local.model.load_state_dict({k: torch.from_numpy(v) for k, v in payload.items()})
                elif kind == "state":
                    self.local.state = payload
                elif kind == "threads":
                    self.child_threads = payload
                elif kind == "error":
                    raise TrainingError(payload)
                elif kind == "done":
                    self.local.state = payload
                    return payload
        except BaseException as err:
            self.local.state, self.local.error = "error", err
            raise
        finally:
            self.commands.close()
            self.process.join(timeout=5)
            if self.process.is_alive():
                self.process.kill()
            _live.discard(self)

    def mirror(self, metrics: dict) -> None:
        t = self.local
        if "loss" in metrics:
            t.history.append({k: metrics[k] for k in METRIC_KEYS})
            t.step_count, t.elapsed = metrics["step"], metrics["elapsed"]
        if "eval" in metrics:
            t.evals.append(metrics["eval"])
        if "snapshot" in metrics:
            t.snapshots.append(metrics["snapshot"])


# ---------------------------------------------------------------- the child process

def child_main(job: dict, commands, messages) -> None:
    """Build the trainer from the job, train on this process's main thread, report everything."""
    prepare_child(CHILD_NICE, job["threads"])
    outbox = Outbox(messages)
    try:
        trainer = child_trainer(job)
    except Exception as err:  # noqa: BLE001 - reported to the parent, which raises it there
        outbox.put("error", error_text(err))
        return
    outbox.put("threads", torch.get_num_threads())
    wanted_threads = [job["threads"]]  # set by obey(), applied on this (the training) thread before each step

    def apply_threads() -> None:  # and each evaluation batch: a run told to share before its first step obeys
        if wanted_threads[0] and wanted_threads[0] != torch.get_num_threads():
            torch.set_num_threads(wanted_threads[0])  # OpenMP's thread count is per calling thread
            outbox.put("threads", torch.get_num_threads())

    trainer.before_work = apply_threads
    threading.Thread(target=obey, args=(trainer, commands, outbox, job["parent_pid"], wanted_threads),
                     daemon=True).start()
    every, n_tokens, tokenizer = job["sample_every"], job["sample_tokens"], trainer.tokenizer
    snapshots_seen = [0]

    def report(metrics: dict) -> None:
        step = metrics.get("step", 0)
        if every and (step % every == 0 or "eval" in metrics):  # each evaluation shows a fresh sample too
            metrics["sample"] = sample_text(trainer.model, tokenizer, trainer.probe_ids[:1] or [0], n_tokens)
        if "snapshot" in metrics:
            if weights_due(trainer, snapshots_seen[0], job["weights_every"]):
                metrics["weights"] = weights(trainer)
            snapshots_seen[0] += 1
        outbox.metrics(metrics)

    try:
        state = trainer.run(callback=report)
    except Exception as err:  # noqa: BLE001
        outbox.put("error", error_text(err))
        return
    outbox.put("weights", weights(trainer))
    outbox.put("done", state)
    messages.close()
    messages.join_thread()


def error_text(err: Exception) -> str:
    """What the user reads: our own errors (TrainingError, ConfigError, ...) speak for themselves; anything
    else is a bug, printed in full to the app's log and named only by its kind."""
    if type(err).__module__.startswith("model_core"):
        return str(err)
    traceback.print_exc()
    return f"an internal error ({type(err).__name__}) stopped the training process; the app's log has the details."


class Outbox:
    """Child -> parent messages, in order. Step metrics wait in a batch until FLUSH_SECONDS have passed or a
    step brings an evaluation, snapshot or sample: a message per step cost the 2-core machine a few per cent
    of training speed. Any other message first sends the batch, so the parent never sees a step late."""

    def __init__(self, messages):
        self.messages, self.pending, self.lock, self.sent_at = messages, [], threading.Lock(), time.monotonic()

    def metrics(self, metrics: dict) -> None:
        with self.lock:
            self.pending.append(metrics)
            news = any(k in metrics for k in ("eval", "snapshot", "sample"))
            if news or time.monotonic() - self.sent_at >= FLUSH_SECONDS:
                self.flush()

    def put(self, kind: str, payload) -> None:
        with self.lock:
            self.flush()
            self.messages.put((kind, payload))

    def flush(self) -> None:
        if self.pending:
            self.messages.put(("metrics", self.pending))
            self.pending = []
        self.sent_at = time.monotonic()


def child_trainer(job: dict) -> Trainer:
    model = GPT(GPTConfig.from_dict(job["model_config"]))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in job["weights"].items()})
    tokenizer = None if job["tokenizer"] is None else tokenizer_from_dict(job["tokenizer"])
    val = None if job["val"] is None else torch.from_numpy(job["val"])
    return Trainer(model, torch.from_numpy(job["train"]), val, job["cfg"], tokenizer)


def weights(trainer: Trainer) -> dict:
    """The weights as numpy copies. Copies, because the queue pickles in a background thread after training
    may have moved on; numpy, because torch would share tensors through file descriptors that die with the
    sender."""
    return {k: v.detach().cpu().numpy().copy() for k, v in trainer.model.state_dict().items()}


def weights_every(cfg, sets: int) -> int:
    """Every how many snapshots the child sends its weights, for about `sets` sets spread over the whole run
    (the parent thins what arrives): a copy of the weights costs the training loop a few milliseconds."""
    if not cfg.snapshot_interval:
        return 0
    return max(1, cfg.max_steps // cfg.snapshot_interval // sets)


def weights_due(trainer: Trainer, index: int, every: int) -> bool:
    """Send the weights with snapshot number `index`? Every `every`-th, and the run's last (the end of the run,
    or a stop)."""
    return bool(every) and (index % every == 0 or trainer.step_count >= trainer.cfg.max_steps or trainer.stopping)


def obey(trainer: Trainer, commands, outbox: Outbox, parent_pid: int, wanted_threads: list) -> None:
    """Carry out pause / resume / stop / threads N. A closed pipe or a vanished app means nobody will read
    this run again: leave at once, without flushing messages into a pipe nobody drains."""
    while True:
        try:
            ready = commands.poll(1.0)
            command = commands.recv() if ready else None
        except (EOFError, OSError):
            command = "gone"
        if command is None:
            if process_alive(parent_pid):
                continue
            command = "gone"
        if command == "gone":
            os._exit(0)
        if command == "pause":
            trainer.pause()
            while trainer.state in ("idle", "running"):  # until the loop parks (or the run ends)
                time.sleep(0.005)
            if trainer.state == "paused":  # the loop is parked: these weights are the paused model
                outbox.put("weights", weights(trainer))
                outbox.put("state", "paused")
        elif command == "resume":
            trainer.resume()
            outbox.put("state", "running")
        elif command == "stop":
            trainer.stop()
        elif command.startswith("threads "):
            wanted_threads[0] = int(command.split()[1])


def start_forkserver() -> None:
    """Start the forkserver now, in the background (its preloads take seconds): the app's warm-up calls this, so
    a class's first Start does not wait for torch to import."""
    from multiprocessing import forkserver

    forkserver.ensure_running()


# ---------------------------------------------------------------- shutdown

def shutdown_all(timeout: float = 3.0) -> None:
    """End every training child of this process and the forkserver (app shutdown: SIGTERM, SIGINT)."""
    for remote in list(_live):
        remote.stop()
    deadline = time.monotonic() + timeout
    for remote in list(_live):
        remote.process.join(max(0.0, deadline - time.monotonic()))
        remote.kill()
    stop_forkserver()


def stop_forkserver() -> None:
    """Kill the forkserver if this process started one (it would exit on its own when we do, but a
    SIGTERM'd app should leave nothing behind even for a moment)."""
    from multiprocessing import forkserver

    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid and process_alive(pid):
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
