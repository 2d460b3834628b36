"""Pause, resume and stop a training loop from another thread: the model Trainer and the SAE trainer share this."""
import threading
import time


class RunControl:
    """pause() / resume() / stop() may be called from any thread; the training loop asks `stopping` and `pausing`
    between steps and parks in wait_while_paused(), where its `state` reads "paused"."""

    state = "idle"

    def __init__(self):
        self._unpaused, self._stop = threading.Event(), threading.Event()
        self._unpaused.set()

    def pause(self) -> None:
        self._unpaused.clear()

    def resume(self) -> None:
        self._unpaused.set()

    def stop(self) -> None:
        self._stop.set()
        self._unpaused.set()  # wake a paused run so it can finish

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
