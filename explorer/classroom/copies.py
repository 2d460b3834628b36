"""A student's model opened read-only by the teacher: a copy, handed over once through an unguessable link
(`/?open=TOKEN`) that the teacher's own page opens. The student's session is never touched; a token is used once
and expires after TOKEN_SECONDS."""
import copy
import secrets
import threading
import time
from dataclasses import replace
from typing import Optional

TOKEN_SECONDS = 300.0
PENDING_KEPT = 8  # copies waiting to be opened (each at most --max-params x 4 bytes)


def read_only_copy(checkpoint):
    """The checkpoint with a deep copy of its model, in eval mode and without gradients: the teacher's experiments
    on it (ablation, hooks) cannot reach the student's model."""
    model = copy.deepcopy(checkpoint.model).eval()
    model.requires_grad_(False)
    return replace(checkpoint, model=model, history=list(checkpoint.history), evals=list(checkpoint.evals),
                   snapshots=list(checkpoint.snapshots))


class PendingCopies:
    def __init__(self, clock=time.monotonic):
        self._pending: dict[str, tuple[float, object, str]] = {}  # token -> (made at, checkpoint, name)
        self._lock = threading.Lock()
        self._clock = clock  # -> seconds; a test passes its own

    def offer(self, checkpoint, name: str) -> str:
        token = secrets.token_urlsafe(18)
        now = self._clock()
        with self._lock:
            self._drop_expired(now)
            while len(self._pending) >= PENDING_KEPT:
                self._pending.pop(next(iter(self._pending)))
            self._pending[token] = (now, checkpoint, name)
        return token

    def take(self, token) -> Optional[tuple]:
        """-> (checkpoint, name) once per token, or None (unknown, used or expired)."""
        if not isinstance(token, str):
            return None
        with self._lock:
            self._drop_expired(self._clock())
            found = self._pending.pop(token, None)
        return None if found is None else found[1:]

    def _drop_expired(self, now: float) -> None:
        for token in [t for t, (made, _, _) in self._pending.items() if now - made > TOKEN_SECONDS]:
            del self._pending[token]
