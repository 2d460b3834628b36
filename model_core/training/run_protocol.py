"""What the server and a training child say to each other, and the one record the server keeps of a run.

Commands go server -> child over a pipe (a Command, SetThreads); messages child -> server over a queue
(Steps, Weights, Confirmed, ThreadsRunning, Failed, Done). RunProgress.apply() is the only code that changes the
record from a message, so feeding it messages tests the server's side without a process."""
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple, Optional

import torch

METRIC_KEYS = ("step", "loss", "lr", "grad_norm", "tokens_per_sec", "elapsed")
ETA_STEPS = 20  # the ETA follows the pace of this many latest steps


class TrainJob(NamedTuple):
    """What a run trains: Trainer(*job) builds its trainer (in the child)."""

    model: object  # GPT
    train_data: torch.Tensor  # token ids
    val_data: Optional[torch.Tensor]
    cfg: object  # TrainConfig
    tokenizer: object = None


# ---------------------------------------------------------------- commands (server -> child)

class Command(Enum):
    """What the user asks of a run; the value is the state asked for."""

    PAUSE = "paused"  # park after this step; the child answers Weights, then Confirmed("paused")
    RESUME = "running"  # the child answers Confirmed("running")
    STOP = "stopped"  # end after this step (a final snapshot, no final evaluation): Weights, then Done


@dataclass(frozen=True)
class SetThreads:
    n: int  # torch threads from the next step (or evaluation batch) on; the child answers ThreadsRunning


# ---------------------------------------------------------------- messages (child -> server)

@dataclass
class Steps:
    metrics: list  # a dict per step in order: METRIC_KEYS, and on some steps eval, snapshot, sample, weights (numpy)


@dataclass
class Weights:
    state: dict  # {name: numpy array}: the model as the run pauses or ends


@dataclass
class Confirmed:
    state: str  # the loop is now "paused" or "running"


@dataclass
class ThreadsRunning:
    n: int


@dataclass
class Failed:
    text: str  # why training cannot go on, as the user reads it


@dataclass
class Done:
    state: str  # run() returned "finished" or "stopped"; the child ends


# ---------------------------------------------------------------- the record

@dataclass(eq=False)
class RunProgress:
    """Everything the server knows of one run, each in one place. Changed by apply() (the child's messages), by
    request() (what the user asked) and, for threads_told, by the handle that tells the child."""

    model: object  # GPT: the weights the child sent last (as it paused or ended); the untrained ones before
    cfg: object  # TrainConfig
    tokenizer: object = None
    has_val: bool = True  # evaluated on a validation split (else on the training text)
    snapshots_kept: Optional[int] = None  # past this many snapshots every second one goes (thin); None: all
    samples_kept: int = 20
    weight_sets_kept: int = 4
    state: str = "idle"  # as the child confirmed last: running, paused, stopped, finished, error
    requested: str = "running"  # what the user asked last: running, paused, stopped (a stop is final)
    requested_at: float = 0.0  # time.monotonic() of that request
    step: int = 0
    history: list = field(default_factory=list)  # a METRIC_KEYS dict per step
    evals: list = field(default_factory=list)  # {step, train_loss, val_loss, progress measures...}
    snapshots: list = field(default_factory=list)  # Snapshot, thinned
    samples: list = field(default_factory=list)  # (step, generated text), the newest samples_kept
    snapshot_weights: list = field(default_factory=list)  # (step, state_dict) of a few snapshots, for model B
    error: Optional[str] = None
    threads_told: int = 0  # torch threads the child was told to use (0: torch's default, one per core)
    threads_running: int = 0  # torch threads the child says it runs with (0: not started yet)

    def apply(self, message) -> None:
        match message:
            case Steps(metrics):
                for m in metrics:
                    self.record(m)
            case Weights(state):
                self.model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
            case Confirmed(state) | Done(state):
                self.state = state
            case ThreadsRunning(n):
                self.threads_running = n
            case Failed(text):
                self.state, self.error = "error", text

    def record(self, m: dict) -> None:
        step = m.get("step", 0)
        if "loss" in m:
            self.history.append({k: m[k] for k in METRIC_KEYS})
            self.step = step
        if "eval" in m:
            self.evals.append(m["eval"])
        if "snapshot" in m:
            self.snapshots.append(m["snapshot"])
            thin(self.snapshots, self.snapshots_kept)
        if "sample" in m:
            self.samples.append((step, m["sample"]))
            del self.samples[:-self.samples_kept]
        if "weights" in m:
            self.snapshot_weights.append((step, {k: torch.from_numpy(v) for k, v in m["weights"].items()}))
            thin(self.snapshot_weights, self.weight_sets_kept)

    def request(self, command: Command, now: float) -> None:
        """Note what the user asked, before the command is sent."""
        if self.requested != "stopped":
            self.requested, self.requested_at = command.value, now

    def eta_seconds(self) -> float:
        """Seconds of training until max_steps at the pace of the last ETA_STEPS steps; inf before the first."""
        recent = self.history[-ETA_STEPS:]
        before = self.history[-ETA_STEPS - 1]["elapsed"] if len(self.history) > ETA_STEPS else 0.0
        span = recent[-1]["elapsed"] - before if recent else 0.0
        return (self.cfg.max_steps - self.step) * span / len(recent) if span > 0 else math.inf


def thin(snapshots: list, keep: Optional[int]) -> None:
    """Past `keep` snapshots, drop every second one (the first and the newest stay): the kept ones stay
    spread over the whole run and memory stays bounded however long it trains."""
    if keep is not None and len(snapshots) > keep:
        snapshots[:] = snapshots[:-1:2] + snapshots[-1:]
