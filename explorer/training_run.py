"""One user's training run in a background thread, polled by the page's gr.Timer."""
import threading
import time
from typing import Optional

from model_core.remote import RemoteTrainer
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
    """Trains in a child process (model_core.remote) mirrored by a daemon thread; keeps samples and the
    error for the poller. `trainer` is the local mirror: read it, control the run through this object."""

    def __init__(self, trainer: Trainer, corpus: str, sample_every: int = 100, sample_tokens: int = 120):
        self.trainer, self.corpus = trainer, corpus
        self.remote = RemoteTrainer(trainer, sample_every, sample_tokens)
        self.samples: list[tuple[int, str]] = []  # (step, generated text)
        self.error: Optional[str] = None
        self.live_figure: tuple[int, str] = (0, "")  # (snapshots seen, live attention JSON), kept by the poller
        self.last_poll = time.monotonic()
        self.thread = threading.Thread(target=self._main, name="trainer-mirror", daemon=True)

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

    def control(self, action: str) -> None:
        """pause, resume or stop the child's training."""
        getattr(self.remote, action)()

    def heartbeat(self) -> None:
        self.last_poll = time.monotonic()

    def _main(self) -> None:
        try:
            self.remote.run(callback=self._after_step)
        except Exception as err:  # noqa: BLE001 - reported to the page, never raised into the server
            self.error = str(err)
        finally:
            _free_slot()

    def _after_step(self, metrics: dict) -> None:
        if "sample" in metrics:
            self.samples.append((metrics.get("step", 0), metrics["sample"]))
        if time.monotonic() - self.last_poll > LIMITS.heartbeat_seconds:
            self.remote.stop()  # the page is gone: nobody is watching this run
