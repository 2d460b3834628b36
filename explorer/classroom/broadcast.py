"""What the teacher sends to every student: a message, a link (tab, prompt, layer, head, knobs), a lesson step or
a class run. Students' pages ask for the newest ones every few seconds (`/class/latest`, no session needed: it is
the same for everyone) and show each unread one in turn as a notice with a "Go there" button; nothing moves until
they press it."""
import secrets
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

KINDS = ("message", "link", "step", "run")
KEPT = 32  # pushes remembered (a "Go there" names the push it shows)
RECENT = 8  # pushes every poll brings, so a page shows in turn those that came while one was unread
MAX_TEXT = 500  # characters of a message


@dataclass(frozen=True)
class Push:
    id: int
    kind: str  # one of KINDS
    text: str  # what the notice says
    query: dict = field(default_factory=dict)  # link parameters it applies (kind link and run), {} otherwise
    lesson: str = ""  # kind step: the lesson's key, and the step index
    step: int = 0
    at: float = field(default_factory=time.time)

    def public(self, epoch: str) -> dict:
        """What every student's page receives."""
        return {**asdict(self), "epoch": epoch}


class Broadcast:
    """The pushes of this server run, newest last. epoch tells pages a restarted server's id 1 from the old one."""

    def __init__(self):
        self.epoch = secrets.token_hex(4)
        self._pushes: list[Push] = []
        self._lock = threading.Lock()

    def send(self, kind: str, text: str, query: Optional[dict] = None, lesson: str = "", step: int = 0) -> Push:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}")
        with self._lock:
            push = Push(self._pushes[-1].id + 1 if self._pushes else 1, kind, text[:MAX_TEXT], dict(query or {}),
                        lesson, step)
            self._pushes = [*self._pushes[-(KEPT - 1):], push]
        return push

    def mirror(self, epoch: str, pushes: list[dict]) -> None:
        """Become a copy of another server's broadcast (a hub student's server mirrors the class's service):
        its epoch and its pushes (as Push.public wrote them), oldest first."""
        fields = ("id", "kind", "text", "query", "lesson", "step", "at")
        copied = [Push(**{f: p[f] for f in fields if f in p}) for p in pushes[-KEPT:]]
        with self._lock:
            self.epoch, self._pushes = str(epoch), copied

    def latest(self) -> Optional[Push]:
        pushes = self._pushes
        return pushes[-1] if pushes else None

    def get(self, push_id) -> Optional[Push]:
        return next((p for p in self._pushes if str(p.id) == str(push_id)), None)

    def history(self) -> list[Push]:
        return list(self._pushes)

    def recent(self) -> list[Push]:
        """The RECENT newest pushes, oldest first."""
        return self._pushes[-RECENT:]
