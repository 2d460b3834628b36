"""One user's training run in a background thread, polled by the page's gr.Timer."""
import threading
import time
from typing import Optional

from model_core.sampling import generate
from model_core.trainer import Trainer

from .errors import UserError
from .limits import LIMITS

_slots_lock = threading.Lock()
_running = 0  # runs currently holding a CPU slot, across all sessions


def _take_slot() -> None:
    global _running
    with _slots_lock:
        if _running >= LIMITS.max_trainers:
            raise UserError(f"{_running} models are already training on this server (the limit is "
                            f"{LIMITS.max_trainers}); wait for one to finish or stop yours first.")
        _running += 1


def _free_slot() -> None:
    global _running
    with _slots_lock:
        _running = max(0, _running - 1)


def running_count() -> int:
    return _running


class TrainingRun:
    """Runs trainer.run() in a daemon thread; keeps samples and the error for the poller."""

    def __init__(self, trainer: Trainer, tokenizer, corpus: str, sample_every: int = 100, sample_tokens: int = 120):
        self.trainer, self.tokenizer, self.corpus = trainer, tokenizer, corpus
        self.sample_every, self.sample_tokens = sample_every, sample_tokens
        self.samples: list[tuple[int, str]] = []  # (step, generated text)
        self.error: Optional[str] = None
        self.last_poll = time.monotonic()
        self.thread = threading.Thread(target=self._main, name="trainer", daemon=True)

    def start(self) -> "TrainingRun":
        _take_slot()
        self.thread.start()
        return self

    @property
    def state(self) -> str:
        return "error" if self.error else self.trainer.state

    @property
    def active(self) -> bool:
        return self.thread.is_alive()

    def heartbeat(self) -> None:
        self.last_poll = time.monotonic()

    def _main(self) -> None:
        try:
            self.trainer.run(callback=self._after_step)
        except Exception as err:  # noqa: BLE001 - reported to the page, never raised into the server
            self.error = str(err)
        finally:
            _free_slot()

    def _after_step(self, metrics: dict) -> None:
        step = metrics.get("step", 0)
        if step % self.sample_every == 0 or "snapshot" in metrics:
            if not self.samples or self.samples[-1][0] != step:
                self.samples.append((step, self.sample_text()))
        if time.monotonic() - self.last_poll > LIMITS.heartbeat_seconds:
            self.trainer.stop()  # the page is gone: nobody is watching this run

    def sample_text(self) -> str:
        """A short generation from the first token of the probe, as the model is right now."""
        start = self.trainer.probe_ids[:1] or [0]
        ids = [s.token for s in generate(self.trainer.model, start, self.sample_tokens, temperature=0.8, seed=0)]
        return self.tokenizer.decode(start + ids) if self.tokenizer else str(ids)
