"""The class as its students' servers report it to the hub service (explorer.classroom.hub_link sends, service
receives). A report is untrusted input (a student controls their own Jupyter server and could send anything): every
field is rebuilt here from what the teacher page shows, with types forced and text clipped, and it is filed under the
hub user its token belongs to, never a name it claims. Answers count only for the lessons the service knows, one per
lesson step and student, so no student can crowd out a classmate's."""
import math
import threading
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from explorer.classroom.answers import MAX_ANSWER, Answer
from explorer.classroom.names import name_key
from explorer.classroom.roster import CURVE_POINTS, clean_name

MAX_STUDENTS = 5_000  # students kept (the oldest report goes first)
MAX_ANSWERS = 400  # answers read from one report
TEXT_CHARS = 120  # a model's name, shape or corpus
STATES = ("idle", "running", "paused", "stopped", "finished", "error")  # model_core.training.trainer
SILENT_AFTER = 15.0  # seconds without a report after which a student's page counts as closed
MIN_INTERVAL = 0.5  # seconds between two reports of one student (their server sends one every 3 s)


@dataclass
class Report:
    user: str
    name: str
    row: Optional[dict]
    curve: Optional[dict]
    at: float  # time.monotonic() when it came


class Reports:
    def __init__(self):
        self._by_user: dict[str, Report] = {}
        self._lock = threading.Lock()

    def record(self, user: str, body: dict, now: Optional[float] = None) -> list[Answer]:
        """File the report of hub user `user` -> the answers it carries (to check and keep)."""
        now = time.monotonic() if now is None else now
        if not isinstance(body, dict):
            raise ValueError("A report is a JSON object.")
        name = shown_name(user, body.get("name"))
        report = Report(user, name, clean_row(user, name, body.get("row")), clean_curve(user, name, body.get("curve")),
                        now)
        with self._lock:
            self._by_user.pop(user, None)
            self._by_user[user] = report
            while len(self._by_user) > MAX_STUDENTS:
                self._by_user.pop(next(iter(self._by_user)))
        return clean_answers(user, name, body.get("answers"))

    def too_soon(self, user: str, now: Optional[float] = None) -> bool:
        """Did user's previous report come less than MIN_INTERVAL ago? (Then this one is refused unread.)"""
        now = time.monotonic() if now is None else now
        last = self._by_user.get(user)
        return last is not None and now - last.at < MIN_INTERVAL

    def class_now(self, now: Optional[float] = None) -> tuple[list[dict], list[dict]]:
        """(rows, curves) of every student who reported a page, in the order they first reported."""
        now = time.monotonic() if now is None else now
        with self._lock:
            reports = sorted(self._by_user.values(), key=lambda r: r.user)
        rows = []
        for r in reports:
            if r.row is not None:
                silent = now - r.at
                rows.append({**r.row, "idle_seconds": round(r.row["idle_seconds"] + silent, 1),
                             "page_open": r.row["page_open"] and silent < SILENT_AFTER})
        return rows, [r.curve for r in reports if r.curve is not None]

    def __len__(self) -> int:
        return len(self._by_user)


def shown_name(user: str, wanted) -> str:
    """How the teacher page lists hub user `user`: their hub name, or the name they typed followed by it ("Ana
    (student7)"), so that nobody can pass for a classmate or for the teacher."""
    typed = clean_name(wanted)
    return user if not typed or name_key(typed) == name_key(user) else f"{typed} ({user})"


def _text(value, limit: int = TEXT_CHARS) -> str:
    return "".join(c for c in value if c.isprintable())[:limit] if isinstance(value, str) else ""


def _number(value, kind=float, default=None):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return kind(value)


def clean_row(user: str, name: str, row) -> Optional[dict]:
    """The teacher page's row (explorer.classroom.roster.student_row) rebuilt from a report's, or None."""
    if not isinstance(row, dict):
        return None
    m = row.get("model") if isinstance(row.get("model"), dict) else {}
    model = {"name": _text(m.get("name")), "shape": _text(m.get("shape")),
             "params": max(0, _number(m.get("params"), int, 0)), "own": m.get("own") is True,
             "steps": max(0, _number(m.get("steps"), int, 0)), "val_loss": _number(m.get("val_loss")),
             "val_step": _number(m.get("val_step"), int), "corpus": _text(m.get("corpus")) or None,
             # measured by the student's own server, which the student controls: the page says "reported"
             "val_source": "measured" if m.get("val_source") == "measured" else "file"}
    r = row.get("run")
    run = None
    if isinstance(r, dict):
        state = r.get("state") if r.get("state") in STATES else "error"
        run = {"state": state, "step": max(0, _number(r.get("step"), int, 0)),
               "max_steps": max(0, _number(r.get("max_steps"), int, 0)),
               "tokens_per_sec": _number(r.get("tokens_per_sec"), int), "corpus": _text(r.get("corpus"))}
    answers = row.get("answers")
    return {"id": user, "name": name, "model": model, "run": run,
            "idle_seconds": max(0.0, _number(row.get("idle_seconds"), float, 0.0)),
            "page_open": row.get("page_open") is True, "answers": max(0, _number(answers, int, 0))}


def clean_curve(user: str, name: str, curve) -> Optional[dict]:
    """A loss curve (explorer.classroom.roster.loss_curve) rebuilt from a report's, at most CURVE_POINTS long."""
    if not isinstance(curve, dict):
        return None
    try:
        steps, loss = _array(curve.get("steps"), np.int32), _array(curve.get("loss"), np.float32)
        val_steps, val_loss = _array(curve.get("val_steps"), np.int32), _array(curve.get("val_loss"), np.float32)
    except (TypeError, ValueError, OverflowError):
        return None
    n, v = min(len(steps), len(loss)), min(len(val_steps), len(val_loss))
    if n == 0:
        return None
    return {"name": name, "id": user, "steps": steps[:n], "loss": loss[:n], "val_steps": val_steps[:v],
            "val_loss": val_loss[:v]}


def _array(values, dtype) -> np.ndarray:
    if not isinstance(values, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                for v in values[:CURVE_POINTS]):
        raise ValueError("not a list of numbers")
    return np.nan_to_num(np.asarray(values[:CURVE_POINTS], dtype=np.float64)).astype(dtype)


def clean_answers(user: str, name: str, answers) -> list[Answer]:
    """The answers of a report, as Answers filed under user; malformed ones are left out (not checked against the
    lessons here: explorer.hub.service keeps only those to a question of a lesson it knows)."""
    if not isinstance(answers, list):
        return []
    out, now = [], time.time()
    for a in answers[:MAX_ANSWERS]:
        if not isinstance(a, dict) or not isinstance(a.get("answer"), str):
            continue
        step, at = _number(a.get("step"), int), _number(a.get("at"), float, now)
        if step is None or not a["answer"].strip():
            continue
        out.append(Answer(user, name, _text(a.get("lesson"), 80), step, _text(a.get("question"), 1000),
                          _text(a["answer"], MAX_ANSWER).strip(), min(at, now)))
    return out
