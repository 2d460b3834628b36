"""Students' answers to lesson questions: checking one, the disk store (`--class-db PATH`, SQLite), the tally of a
choice question and the CSV export. The class keeps every answer in memory too (explorer.classroom.answer_book);
this module writes only that file."""
import csv
import io
import sqlite3
import threading
from dataclasses import astuple, dataclass
from datetime import datetime, timezone

from explorer.common.errors import UserError

MAX_ANSWER = 500  # characters of a free-text answer
CSV_HEADER = ("name", "student", "lesson", "step", "question", "answer", "right", "time")  # step from 1, as shown
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet may run a cell starting so as a formula

BUSY_SECONDS = 0.25  # how long a write waits for a file another program holds locked (then it is retried later)
SCHEMA = """CREATE TABLE IF NOT EXISTS answers (
    student TEXT NOT NULL, name TEXT NOT NULL, lesson TEXT NOT NULL, step INTEGER NOT NULL,
    question TEXT NOT NULL, answer TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (student, lesson, step))"""
COLUMNS = "student, name, lesson, step, question, answer, at"  # in Answer's field order


@dataclass(frozen=True)
class Answer:
    student: str  # a session's pseudonymous id (a few hex characters), never its secret key
    name: str  # the display name the student chose ('' when none)
    lesson: str  # lesson key (a shipped lesson's slug, or 'file' for the --lesson file)
    step: int  # 0-based step index
    question: str  # the question's text, as the student saw it
    answer: str  # a free-text answer, or one of the choices
    at: float  # time.time() when it was given


class AnswerStore:
    """Answers on disk in SQLite when a path is given (`--class-db PATH`): they survive a restart. Nothing else is
    written. One connection shared by the server's threads, each call under a lock."""

    def __init__(self, path):
        self.path, self._lock = str(path), threading.Lock()
        self._db = None
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=BUSY_SECONDS)
            with self._db:
                self._db.execute(SCHEMA)
                self._db.execute(f"SELECT {COLUMNS} FROM answers LIMIT 0")  # an older or foreign table fails here
        except sqlite3.Error as err:
            if self._db is not None:
                self._db.close()
            raise ValueError(f"Cannot keep answers in {self.path!r} ({err}): give a new file in a folder you can "
                             "write to, or an answers file this app wrote before.") from None

    def record(self, answer: Answer) -> None:
        """Keep answer; it replaces the student's earlier answer to the same lesson step."""
        self.record_all([answer])

    def record_all(self, answers: list[Answer]) -> None:
        """Keep answers in order, in one transaction (all or none: sqlite3.Error when the file is busy)."""
        with self._lock, self._db:
            self._db.executemany(f"INSERT OR REPLACE INTO answers ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 [astuple(a) for a in answers])

    def all(self) -> list[Answer]:
        """Every answer kept, ordered by lesson, step and time."""
        with self._lock:
            rows = self._db.execute(f"SELECT {COLUMNS} FROM answers ORDER BY lesson, step, at").fetchall()
        return [Answer(*row) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def check_answer(question, text: str) -> str:
    """The answer to keep for question (an explorer.teaching.lessons.Question); UserError saying what is wrong."""
    answer = (text or "").strip()
    if not answer:
        raise UserError("Your answer is empty: type an answer or pick a choice, then send it.")
    if question.free and len(answer) > MAX_ANSWER:
        raise UserError(f"Your answer has {len(answer)} characters; please keep it under {MAX_ANSWER}.")
    if not question.free and answer not in question.choices:
        raise UserError(f"Pick one of the choices: {', '.join(question.choices)}.")
    return answer


def tally(answers: list[Answer], choices: tuple) -> dict[str, int]:
    """choice -> how many answers picked it, for every choice in order (0 when nobody did)."""
    counts = dict.fromkeys(choices, 0)
    for answer in answers:
        if answer.answer in counts:
            counts[answer.answer] += 1
    return counts


def answers_csv(answers: list[Answer], right_of=lambda answer: None) -> str:
    """The answers as CSV text for a spreadsheet: a header row, then one row per answer (steps numbered from 1 as
    the pages show them; right: yes, no, or empty where right_of(answer) says None, a question with no answer to
    check; time in ISO 8601 UTC)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_HEADER)
    for a in answers:
        at = datetime.fromtimestamp(a.at, timezone.utc).isoformat(timespec="seconds")
        right = {True: "yes", False: "no"}.get(right_of(a), "")
        writer.writerow([_cell(v) for v in (a.name, a.student, a.lesson, str(a.step + 1), a.question, a.answer,
                                            right, at)])
    return out.getvalue()


def _cell(text: str) -> str:
    """text, with a leading ' when a spreadsheet would read it as a formula (CSV injection)."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text
