"""Per-browser-session state: the model being inspected, the data, the training run."""
import copy
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

import torch

from model_core.checkpoint import Checkpoint

from .errors import UserError
from .limits import LIMITS
from .shipped import DEFAULT_MODEL, load_shipped
from .training_run import TrainingRun


@dataclass
class Analysis:
    """One prompt run through the model with every activation cached."""

    prompt: str
    ids: list[int]
    labels: list[str]  # display label per position
    logits: torch.Tensor  # [T, V]
    cache: object  # ActivationCache


@dataclass
class DataChoice:
    """What the Data tab prepared for training."""

    name: str  # corpus name or uploaded file name
    text: str
    tokenizer: object
    train: torch.Tensor  # token ids
    val: torch.Tensor


@dataclass
class Session:
    checkpoint: Checkpoint  # the model being inspected, with its tokenizer and training record
    model_name: str
    data: Optional[DataChoice] = None
    run: Optional[TrainingRun] = None
    version: int = 0  # bumped whenever the inspected model changes
    _analysis: dict = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    last_seen: float = field(default_factory=time.monotonic)

    @property
    def model(self):
        return self.checkpoint.model

    @property
    def tokenizer(self):
        return self.checkpoint.tokenizer

    def use(self, checkpoint: Checkpoint, name: str) -> None:
        """Inspect a different model from now on."""
        with self.lock:
            checkpoint.model.eval()
            self.checkpoint, self.model_name = checkpoint, name
            self.version += 1
            self._analysis.clear()

    def analysis(self, prompt: str, ids: list[int], labels: list[str]) -> Analysis:
        """The cached full-activation run for this prompt (recomputed only when prompt or model change)."""
        key = (self.version, tuple(ids))
        with self.lock:
            if key not in self._analysis:
                logits, cache = self.model.run_with_cache(torch.tensor([ids]))
                self._analysis.clear()  # keep one: caches of long prompts are megabytes
                self._analysis[key] = Analysis(prompt, ids, labels, logits[0], cache)
            return self._analysis[key]

    def adopt_training_model(self) -> None:
        """Inspect the model being trained (a copy while it is paused, the model itself when done)."""
        run = self.run
        if run is None or run.trainer.step_count == 0:
            return
        done = not run.active
        if run.state not in ("paused", "stopped", "finished", "error") or getattr(run, "adopted", -1) == run.trainer.step_count:
            return
        model = run.trainer.model if done else copy.deepcopy(run.trainer.model)
        ckpt = Checkpoint.from_trainer(run.trainer, corpus=run.corpus)
        ckpt.model = model.cpu()
        self.use(ckpt, f"trained on {run.corpus} ({run.trainer.step_count} steps)")
        run.adopted = run.trainer.step_count

    def stop_training(self) -> None:
        if self.run is not None and self.run.active:
            self.run.control("stop")


class SessionRegistry:
    """Sessions by Gradio session hash, least recently used dropped (and its training stopped) at capacity."""

    def __init__(self):
        self._sessions: "OrderedDict[str, Session]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Session:
        with self._lock:
            session = self._sessions.get(key)
            if session is not None:
                self._sessions.move_to_end(key)
        if session is None:
            session = new_session()
            with self._lock:
                session = self._sessions.setdefault(key, session)
                while len(self._sessions) > LIMITS.max_sessions:
                    _, old = self._sessions.popitem(last=False)
                    old.stop_training()
        session.last_seen = time.monotonic()
        return session

    def close(self, key: str) -> None:
        with self._lock:
            session = self._sessions.pop(key, None)
        if session is not None:
            session.stop_training()

    def __len__(self) -> int:
        return len(self._sessions)


def new_session(model_name: str = DEFAULT_MODEL) -> Session:
    from . import app_state  # the default model may be changed by app.py --model

    name = app_state.default_model
    return Session(load_shipped(name), name)


def require_model(session: Session) -> None:
    if session.checkpoint is None or session.tokenizer is None:
        raise UserError("No model is loaded: pick a shipped model or train one on the Train tab.")


REGISTRY = SessionRegistry()
