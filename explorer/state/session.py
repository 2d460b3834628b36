"""Per-browser-session state, in three parts: what the student inspects (explorer.state.inspected), their workspace
(explorer.state.workspace) and who they are in the class (Member); and the registry that keeps a bounded number of
sessions, expires idle training runs and tells evicted users what happened.

Memory budget per session (docs/classroom.md): the inspected model (at most --max-params x 4 bytes, plus one copy
while a run is paused) and, for an uploaded one, its tokenizer, history and snapshots (at most
LIMITS.session_data_mb: LoadLimits.max_record_bytes); its training data as int16/int32 ids with their tokenizer
(at most LIMITS.session_data_mb), one cached analysis (one prompt of at most block_size tokens), at most
LIMITS.snapshots_kept training snapshots, and the previous run's evaluations, drawn faded beside the current run's
(one previous run, at most explorer.callbacks.train_comparison.EVALS_KEPT rows)."""
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.common.shipped_list import read_only_sentence
from explorer.common.tempfiles import sweep
from explorer.state.eviction import eviction_victim, holds_work, surplus_blank
from explorer.state.inspected import Inspected
from explorer.state.shipped import shipped_template
from explorer.state.training_run import expire_idle_runs
from explorer.state.workspace import Workspace
from model_core.checkpoints.checkpoint import Checkpoint

REAP_SECONDS = 5.0  # how often idle runs and old downloads are looked for
EVICTED_REMEMBERED = 256  # evicted sessions whose users are told why when they come back


@dataclass
class Member:
    """Who the student is in the class (explorer.classroom)."""

    display_name: str = ""  # the name they show the teacher
    student_id: str = field(default_factory=lambda: secrets.token_hex(4))  # pseudonymous (never the session key)
    answers: dict = field(default_factory=dict)  # their answers to lesson questions {(lesson, step): Answer}
    teacher: bool = False  # has opened a student's model from the teacher page (listed as the teacher's)


@dataclass
class Session:
    """One browser's (or script's) state: what it inspects, what it made, who it is in the class, and what the
    registry needs to keep, find and release it."""

    inspected: Inspected
    workspace: Workspace = field(default_factory=Workspace)
    member: Member = field(default_factory=Member)
    last_seen: float = field(default_factory=time.monotonic)
    notices: list = field(default_factory=list)  # messages for the user's next request
    detached_at: Optional[float] = None  # when its last page closed (kept LIMITS.resume_ttl_seconds for a reload)
    address: str = ""  # the client address that made it (blank sessions per address are capped)
    browser: bool = False  # a page's session, found again through its browser's key (explorer.state.eviction)

    @property
    def lock(self) -> threading.RLock:
        """Held around every use (explorer.tabs.binding): the inspected model's, so a trained model is adopted
        between two requests, never in the middle of one."""
        return self.inspected.lock


class SessionRegistry:
    """Sessions by key: a browser key kept in the page's localStorage (so a reload finds its session again),
    or the Gradio session hash for clients without one (scripts). Each page's session hash is an alias of
    its key. Over capacity one session is dropped by explorer.state.eviction's rules (blank ones first; a page's
    work never for a script), its run stopped, and its user told why when they come back. A reaper thread
    expires idle runs, releases sessions whose pages closed more than LIMITS.resume_ttl_seconds ago and sweeps
    old downloads."""

    def __init__(self):
        self._sessions: "OrderedDict[str, Session]" = OrderedDict()
        self._aliases: dict[str, str] = {}  # page session hash -> session key
        self._evicted: "OrderedDict[str, str]" = OrderedDict()  # key -> what its user is told on return
        self._lock = threading.Lock()
        self._reaper: Optional[threading.Thread] = None
        self.released = 0  # sessions let go of so far (the server trims the allocator after some go)

    def get(self, page: str, address: str = "") -> Session:
        """The session of this page (or script), made when it has none; address: the client's, for the cap on
        blank sessions per address."""
        with self._lock:
            key = self._aliases.get(page, page)
            session = self._sessions.get(key)
            if session is not None:
                self._sessions.move_to_end(key)
        if session is None:
            session = new_session()
            session.address = address
            with self._lock:
                session = self._sessions.setdefault(key, session)
                session.browser = session.browser or page in self._aliases
                self._tell_if_evicted(key, session)
                for blank in surplus_blank(self._sessions, address, keep=key):
                    self._drop(blank)
                self._evict_over_capacity(key)
            self._start_reaper()
        session.last_seen = time.monotonic()
        return session

    def resume(self, page: str, browser_key, scope: Optional[str] = None) -> str:
        """Attach this page to the session its browser key names (a reload, or a reopened tab within the
        TTL); otherwise give the page's session a new key. -> the key the browser keeps. scope: a notebook view's
        number (transformer_explorer.show): each view of one browser has a session of its own, under the browser's
        key and the scope, so two frames of one notebook never share a model."""
        if scope is not None:
            return self._resume_scoped(page, browser_key, scope)
        with self._lock:
            if isinstance(browser_key, str) and browser_key in self._sessions:
                self._attach(page, browser_key)
                return browser_key
            key = secrets.token_urlsafe(24)
            session = self._sessions.pop(self._aliases.get(page, page), None)
            if session is not None:
                self._sessions[key] = session
            notice = self._evicted.pop(browser_key, None) if isinstance(browser_key, str) else None
            if notice and session is not None:
                session.notices.append(notice)
            elif notice:
                self._evicted[key] = notice  # told when the page's first request creates its session
            self._attach(page, key)
            return key

    def _resume_scoped(self, page: str, browser_key, scope: str) -> str:
        base = browser_key if isinstance(browser_key, str) and len(browser_key) >= 16 else secrets.token_urlsafe(24)
        key = f"{base}|{scope}"
        with self._lock:
            if key not in self._sessions:
                session = self._sessions.pop(self._aliases.get(page, page), None)
                if session is not None:
                    self._sessions[key] = session
            self._attach(page, key)
        return base

    def _attach(self, page: str, key: str) -> None:
        old = self._aliases.get(page, page)
        if old != key and old in self._sessions and old not in self._aliases.values():
            self._drop(old)  # a blank session this page made before it was attached
        self._aliases[page] = key
        if key in self._sessions:
            self._sessions[key].detached_at = None
            self._sessions[key].browser = True
            self._sessions.move_to_end(key)

    def is_page(self, page: str) -> bool:
        """Is this Gradio session hash a browser page's (one that sent its key)?"""
        return page in self._aliases

    def detach(self, page: str) -> None:
        """The page closed (or reloads): a session no other page shows waits LIMITS.resume_ttl_seconds for
        its browser to come back; one without a browser key (a script's) is released at once."""
        with self._lock:
            key = self._aliases.pop(page, None)
            if key is not None and key in self._sessions and key not in self._aliases.values():
                self._sessions[key].detached_at = time.monotonic()
            sessions = self._take([page]) if key is None else []
        for session in sessions:
            session.workspace.stop_training()

    def release_detached(self, now: Optional[float] = None) -> int:
        """Close the sessions whose pages closed more than the TTL ago; -> how many."""
        now = time.monotonic() if now is None else now
        with self._lock:
            keys = [k for k, s in self._sessions.items()
                    if s.detached_at is not None and now - s.detached_at > LIMITS.resume_ttl_seconds]
            sessions = self._take(keys)
            for key in keys:
                self._remember(key, f"Your earlier session ended: its page was closed for more than "
                                    f"{LIMITS.resume_ttl_seconds / 60:g} minutes, so the server released its model.")
        for session in sessions:
            session.workspace.stop_training()
        return len(sessions)

    def _tell_if_evicted(self, key: str, session: Session) -> None:
        notice = self._evicted.pop(key, None)
        if notice:
            session.notices.append(notice)

    def _evict_over_capacity(self, newcomer: str) -> None:
        while len(self._sessions) > LIMITS.max_sessions:
            key = eviction_victim(self._sessions, newcomer)
            if key == newcomer:  # nobody else may go: the newcomer serves this request and is not kept
                self._drop(newcomer).notices.append(full_notice())
                return
            old = self._sessions[key]
            notice = eviction_notice(old) if holds_work(old) else None  # told before its run is stopped
            self._drop(key)
            if notice:  # a blank session goes silently: its user lost nothing
                self._remember(key, notice)

    def _take(self, keys) -> "list[Session]":
        """(holding the lock) take out the held sessions of keys, counted as released; the caller stops their runs."""
        sessions = [self._sessions.pop(key) for key in keys if key in self._sessions]
        self.released += len(sessions)
        return sessions

    def _drop(self, key: str) -> Session:
        """(holding the lock) release a session at once, stopping its run."""
        old = self._take([key])[0]
        old.workspace.stop_training()
        return old

    def _remember(self, key: str, notice: str) -> None:
        self._evicted[key] = notice
        while len(self._evicted) > EVICTED_REMEMBERED:
            self._evicted.popitem(last=False)

    def close(self, page: str) -> None:
        with self._lock:
            sessions = self._take([self._aliases.pop(page, page)])
        for session in sessions:
            session.workspace.stop_training()

    def close_all(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), OrderedDict()
            self._aliases.clear()
        for session in sessions:
            session.workspace.stop_training()

    def __len__(self) -> int:
        return len(self._sessions)

    def sessions(self) -> "list[Session]":
        """Every session held now, least recently used first (a snapshot: the teacher page reads it)."""
        with self._lock:
            return list(self._sessions.values())

    def _start_reaper(self) -> None:
        with self._lock:
            if self._reaper is None or not self._reaper.is_alive():
                self._reaper = threading.Thread(target=_reap_forever, name="session-reaper", daemon=True)
                self._reaper.start()


def full_notice() -> str:
    return (f"This server already keeps {LIMITS.max_sessions} sessions (its --max-sessions) that hold students' work "
            "or runs, so it does not keep yours between requests: this answer is from the default model, and what "
            "you change now is not kept. Try again later.")


def eviction_notice(session: Session) -> str:
    limit = f"this server keeps at most {LIMITS.max_sessions} sessions and yours was the least recently used"
    if session.workspace.holds_paused_run:
        return (f"Your earlier session was closed because {limit}: your paused run (step "
                f"{session.workspace.run.progress.step:,}) was stopped and its model released. Train again or load a "
                "saved .zip.")
    return f"Your earlier session was closed because {limit}: the model you had open was released."


def _reap_forever() -> None:
    while True:
        time.sleep(REAP_SECONDS)
        try:
            expire_idle_runs()
            REGISTRY.release_detached()
            sweep()
        except Exception:  # noqa: BLE001 - the reaper must outlive any one bad run
            pass


def new_session(model_name: Optional[str] = None) -> Session:
    """A session inspecting model_name (default: the app's --model), sharing the shipped model until it
    first uses it."""
    from explorer.common import app_state  # the default model may be changed by app.py --model

    name = model_name or app_state.default_model
    return Session(Inspected(shipped_template(name), name, shared_key=f"shipped:{name}", shares_model=True))


def require_model(session: Session) -> None:
    if session.inspected.held is None or session.inspected.tokenizer is None:
        raise UserError("No model is loaded: pick a shipped model or train one on the Train tab.")


def refuse_pretrained(checkpoint: Checkpoint, doing: str) -> None:
    """UserError if the checkpoint's model is a frozen pretrained one (read-only: every session shares it)."""
    if checkpoint is not None and checkpoint.model.frozen:
        raise UserError(read_only_sentence(doing))


REGISTRY = SessionRegistry()
