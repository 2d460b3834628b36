"""Per-browser-session state: the model being inspected, the data, the training run; and the registry that
keeps a bounded number of sessions, expires idle training runs and tells evicted users what happened.

Memory budget per session (docs/classroom.md): the inspected model (at most --max-params x 4 bytes, plus one copy
while a run is paused) and, for an uploaded one, its tokenizer, history and snapshots (at most
LIMITS.session_data_mb: LoadLimits.max_record_bytes); its training data as int16/int32 ids with their tokenizer
(at most LIMITS.session_data_mb), one cached analysis (one prompt of at most block_size tokens), and at most
LIMITS.snapshots_kept training snapshots."""
import copy
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Optional

import torch

from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.common.shipped_list import read_only_sentence
from explorer.common.tempfiles import sweep
from explorer.state.eviction import eviction_victim, holds_work, surplus_blank
from explorer.state.shipped import shipped_template
from explorer.state.training_run import TrainingRun, expire_idle_runs
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.data.tokenization import tokenizer_bytes
from model_core.training.run_protocol import Command

REAP_SECONDS = 5.0  # how often idle runs and old downloads are looked for
EVICTED_REMEMBERED = 256  # evicted sessions whose users are told why when they come back
ANALYSIS_KEEP_BYTES = 8_000_000  # a hook-filtered analysis larger than this is recomputed, not kept


@dataclass
class Analysis:
    """One prompt run through the model with every activation cached."""

    prompt: str
    ids: list[int]
    labels: list[str]  # display label per position
    logits: torch.Tensor  # [T, V]; [1, V] (the last position) when only some hook points were kept
    cache: object  # ActivationCache


@dataclass
class DataChoice:
    """What the Data tab prepared for training (the text itself is not kept: only its first lines)."""

    name: str  # corpus name or uploaded file name
    sample: str  # the first characters, for display
    n_chars: int
    tokenizer: object
    train: torch.Tensor  # token ids, int16/int32 (model_core.data.compact)
    val: torch.Tensor
    uploaded: bool = False  # the user's own file (kept until they choose again), not a built-in corpus
    task: Optional[dict] = None  # an algorithmic task's spec (model_core.data.tasks); train/val are its data

    @property
    def nbytes(self) -> int:
        """The token ids and the tokenizer (a word vocabulary of 65,536 words keeps ~9 MB)."""
        return self.train.nbytes + self.val.nbytes + tokenizer_bytes(self.tokenizer)


@dataclass
class Session:
    held: Checkpoint  # the model being inspected, with its tokenizer and training record (read it via .checkpoint)
    model_name: str
    data: Optional[DataChoice] = None
    run: Optional[TrainingRun] = None
    version: int = 0  # bumped whenever the inspected model changes
    _analysis: dict = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)  # held around every use (explorer.tabs.binding)
    last_seen: float = field(default_factory=time.monotonic)
    shared_key: Optional[str] = None  # "shipped:NAME" while inspecting an unmodified shipped model
    notices: list = field(default_factory=list)  # messages for the user's next request
    experiments: dict = field(default_factory=dict)  # Experiments tab: evaluation set, means, maps, model B
    features: dict = field(default_factory=dict)  # Features tab: an uploaded SAE and its statistics
    detached_at: Optional[float] = None  # when its last page closed (kept LIMITS.resume_ttl_seconds for a reload)
    # held.model is a shipped model every session shares until one needs its own: hooks are per model object,
    # so the first use through .checkpoint or .model copies it (a class arriving at once copies nothing)
    shares_model: bool = False
    # the class (explorer.classroom): the name the student shows the teacher, a pseudonymous id (never the
    # session's secret key) and their answers to lesson questions {(lesson, step): Answer}
    display_name: str = ""
    student_id: str = field(default_factory=lambda: secrets.token_hex(4))
    answers: dict = field(default_factory=dict)
    teacher: bool = False  # has opened a student's model from the teacher page (listed as the teacher's)
    address: str = ""  # the client address that made it (blank sessions per address are capped)
    browser: bool = False  # a page's session, found again through its browser's key (explorer.state.eviction)

    @property
    def checkpoint(self) -> Checkpoint:
        """The inspected checkpoint, with a model of this session's own."""
        if self.shares_model:
            with self.lock:
                if self.shares_model:
                    self.held = replace(self.held, model=self.held.model.copy())
                    self.shares_model = False
        return self.held

    @property
    def model(self):
        return self.checkpoint.model

    @property
    def config(self):
        """The inspected model's GPTConfig (read without copying a shared model)."""
        return self.held.model.cfg

    @property
    def tokenizer(self):
        return self.held.tokenizer

    def use(self, checkpoint: Checkpoint, name: str, shared_key: Optional[str] = None,
            shares_model: bool = False) -> None:
        """Inspect a different model from now on (shared_key: analyses may be shared with other sessions;
        shares_model: checkpoint.model is a shipped template, copied on first use)."""
        with self.lock:
            if not shares_model:
                checkpoint.model.eval()
            self.held, self.model_name, self.shared_key = checkpoint, name, shared_key
            self.shares_model = shares_model
            self.version += 1
            self._analysis.clear()

    def use_shipped(self, name: str) -> None:
        """Inspect a shipped model (shared until this session first uses it)."""
        self.use(shipped_template(name), name, shared_key=f"shipped:{name}", shares_model=True)

    def analysis(self, prompt: str, ids: list[int], labels: list[str], names: Optional[tuple] = None) -> Analysis:
        """The cached full-activation run for this prompt (recomputed only when prompt or model change).
        names: only these hook points and the last position's logits (a large model's views ask for what they
        draw), in float16; such a run is kept only up to ANALYSIS_KEEP_BYTES, so 30 sessions of a 135M model stay
        small."""
        key = (self.version, tuple(ids), names)
        with self.lock:
            if key not in self._analysis:
                logits, cache = self.model.run_with_cache(torch.tensor([ids]), names_filter=names)
                if names is not None:  # half the bytes, the same whether this run is kept or not
                    cache.store = {name: t.to(torch.float16) for name, t in cache.store.items()}
                run = Analysis(prompt, ids, labels, logits[0] if names is None else logits[0, -1:].clone(), cache)
                self._analysis.clear()  # keep one: caches of long prompts are megabytes
                if names is None or sum(t.nbytes for t in cache.store.values()) <= ANALYSIS_KEEP_BYTES:
                    self._analysis[key] = run
                return run
            return self._analysis[key]

    def adopt_training_model(self, run: TrainingRun, final: bool) -> None:
        """Inspect the model a run trained (its child confirmed a pause, final False: a copy, the run goes on; or
        the end: the model itself). A run that failed is never adopted: no message confirms it."""
        p = run.progress
        ckpt = Checkpoint.from_trainer(p, corpus=run.corpus)
        ckpt.model = (p.model if final else copy.deepcopy(p.model)).cpu()
        self.use(ckpt, f"trained on {run.corpus} ({p.step} steps)")

    def stop_training(self) -> None:
        if self.run is not None and self.run.active:
            self.run.control(Command.STOP)

    @property
    def holds_paused_run(self) -> bool:
        return self.run is not None and self.run.active and self.run.progress.requested == "paused"


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

    def resume(self, page: str, browser_key) -> str:
        """Attach this page to the session its browser key names (a reload, or a reopened tab within the
        TTL); otherwise give the page's session a new key. -> the key the browser keeps."""
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

    def _attach(self, page: str, key: str) -> None:
        old = self._aliases.get(page, page)
        if old != key and old in self._sessions and old not in self._aliases.values():
            self._sessions.pop(old).stop_training()  # a blank session this page made before it was attached
            self.released += 1
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
            if key is None:
                session = self._sessions.pop(page, None)
                self.released += session is not None
            else:
                session = None
                if key in self._sessions and key not in self._aliases.values():
                    self._sessions[key].detached_at = time.monotonic()
        if session is not None:
            session.stop_training()

    def release_detached(self, now: Optional[float] = None) -> int:
        """Close the sessions whose pages closed more than the TTL ago; -> how many."""
        now = time.monotonic() if now is None else now
        with self._lock:
            keys = [k for k, s in self._sessions.items()
                    if s.detached_at is not None and now - s.detached_at > LIMITS.resume_ttl_seconds]
            sessions = [self._sessions.pop(k) for k in keys]
            self.released += len(sessions)
            for key in keys:
                self._remember(key, f"Your earlier session ended: its page was closed for more than "
                                    f"{LIMITS.resume_ttl_seconds / 60:g} minutes, so the server released its model.")
        for session in sessions:
            session.stop_training()
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

    def _drop(self, key: str) -> Session:
        """(holding the lock) release a session at once, stopping its run."""
        old = self._sessions.pop(key)
        self.released += 1
        old.stop_training()
        return old

    def _remember(self, key: str, notice: str) -> None:
        self._evicted[key] = notice
        while len(self._evicted) > EVICTED_REMEMBERED:
            self._evicted.popitem(last=False)

    def close(self, page: str) -> None:
        with self._lock:
            session = self._sessions.pop(self._aliases.pop(page, page), None)
            self.released += session is not None
        if session is not None:
            session.stop_training()

    def close_all(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), OrderedDict()
            self._aliases.clear()
        for session in sessions:
            session.stop_training()

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
    if session.holds_paused_run:
        return (f"Your earlier session was closed because {limit}: your paused run (step "
                f"{session.run.progress.step:,}) was stopped and its model released. Train again or load a "
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
    return Session(shipped_template(name), name, shared_key=f"shipped:{name}", shares_model=True)


def require_model(session: Session) -> None:
    if session.held is None or session.tokenizer is None:
        raise UserError("No model is loaded: pick a shipped model or train one on the Train tab.")


def refuse_pretrained(checkpoint: Checkpoint, doing: str) -> None:
    """UserError if the checkpoint's model is a frozen pretrained one (read-only: every session shares it)."""
    if checkpoint is not None and checkpoint.model.frozen:
        raise UserError(read_only_sentence(doing))


REGISTRY = SessionRegistry()
