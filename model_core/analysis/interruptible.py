"""Long analyses can give way or stop between batches. The caller (the app) sets a function for the current
thread with `interruptible(fn)`; every loop of a long analysis (a patching sweep's batches, an ablation's windows
and generated tokens, a scan of the whole text) calls `between_batches()`, which calls it. That function may wait
(let another job run first) or raise an error that says why the analysis stopped; it is called outside any hook,
or inside a `model.hooks(...)` block that removes them, so an analysis stopped there leaves its model as it found
it. Without a caller's function it does nothing."""
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Optional

_BETWEEN: ContextVar[Optional[Callable[[], None]]] = ContextVar("between_batches", default=None)


def between_batches() -> None:
    """A point where a long analysis may wait or stop (it raises the caller's error to stop)."""
    fn = _BETWEEN.get()
    if fn is not None:
        fn()


@contextmanager
def interruptible(fn: Callable[[], None]):
    """Within the block, this thread's between_batches() calls fn."""
    token = _BETWEEN.set(fn)
    try:
        yield
    finally:
        _BETWEEN.reset(token)
