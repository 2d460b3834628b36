"""Pause, resume and stop a training loop from another thread: the model Trainer and the SAE trainer share this."""
import threading
import time
from typing import Callable


class RunControl:
    """pause() / resume() / stop() may be called from any thread; the training loop asks `stopping` and `pausing`
    between steps and parks in wait_while_paused(), where its `state` reads "paused"."""

    state = "idle"

    def __init__(self):
        self._unpaused, self._stop = threading.Event(), threading.Event()
        self._unpaused.set()
        # called on the training thread before every step and every evaluation (or collection) batch: a training
        # child applies a new torch thread count there (OpenMP's count is per thread), also during the first evaluation
        self.before_work: Callable[[], None] = lambda: None

    def pause(self) -> None:
        self._unpaused.clear()

    def resume(self) -> None:
        self._unpaused.set()

    def stop(self) -> None:
        self._stop.set()
        self._unpaused.set()  # wake a paused run so it can finish

    def follow(self, other: "RunControl") -> None:
        """Obey other's pause(), resume() and stop() from now on, those already asked included (a run made of
        phases, such as an SAE run's collecting then training, hands its control to the phase that runs)."""
        self._unpaused, self._stop = other._unpaused, other._stop

    @property
    def stopping(self) -> bool:
        """stop() was called and the loop has not acknowledged it yet (stop_acknowledged)."""
        return self._stop.is_set()

    @property
    def pausing(self) -> bool:
        """pause() was called and neither resume() nor stop() since."""
        return not self._unpaused.is_set()

    def stop_acknowledged(self) -> None:
        """The loop has ended after a stop: the next run starts afresh."""
        self._stop.clear()

    def wait_while_paused(self) -> float:
        """Park (state "paused") until resume() or stop(); -> the seconds spent parked. Wakes every 0.1 s so that
        a signal (Ctrl-C) is handled while parked."""
        self.state = "paused"
        parked_at = time.perf_counter()
        while not self._unpaused.wait(timeout=0.1):
            pass
        self.state = "running"
        return time.perf_counter() - parked_at
