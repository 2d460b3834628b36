"""Every answer the class gave, kept by the class rather than by the sessions: an answer outlives its session
(released, evicted or reloaded). In memory, and with `--class-db PATH` in that SQLite file too. A file that another
program holds busy or locked loses nothing: the answer stays in memory and is written on the next try (every new
answer and every teacher's refresh tries again)."""
import sqlite3
import threading
from collections import OrderedDict
from typing import Optional

from explorer.classroom.answers import Answer

MAX_KEPT = 20_000  # answers kept in memory (one per student and lesson step); the oldest go first
BUSY_NOTE = ("The answers file (--class-db) is busy: another program holds it locked. Every answer is kept in "
             "memory and written to the file as soon as it is free.")


def _key(answer: Answer) -> tuple:
    return answer.student, answer.lesson, answer.step


class AnswerBook:
    def __init__(self, store=None):
        self.store = store  # explorer.classroom.answers.AnswerStore, or None
        self._answers: "OrderedDict[tuple, Answer]" = OrderedDict()
        self._unwritten: "OrderedDict[tuple, Answer]" = OrderedDict()  # waiting for the file
        self._lock = threading.Lock()

    def record(self, answer: Answer) -> bool:
        """Keep answer (it replaces the student's earlier one for that step); -> whether the file has it (True
        without a file)."""
        with self._lock:
            for kept in (self._answers, self._unwritten if self.store is not None else None):
                if kept is not None:
                    kept.pop(_key(answer), None)
                    kept[_key(answer)] = answer
            while len(self._answers) > MAX_KEPT:
                self._answers.popitem(last=False)
        return self.flush()

    def flush(self) -> bool:
        """Write the answers waiting for the file; -> True when none is left waiting."""
        if self.store is None:
            return True
        with self._lock:
            waiting = list(self._unwritten.values())
            if not waiting:
                return True
            try:
                self.store.record_all(waiting)
            except sqlite3.Error:
                return False
            for answer in waiting:
                if self._unwritten.get(_key(answer)) is answer:
                    del self._unwritten[_key(answer)]
            return not self._unwritten

    def all(self) -> tuple[list[Answer], Optional[str]]:
        """(every answer: the file's, from before a restart too, and memory's, ordered by lesson, step and time;
        a note for the teacher when the file could not be read or written, else None)."""
        note, on_disk = None, []
        if self.store is not None:
            if not self.flush():
                note = BUSY_NOTE
            try:
                on_disk = self.store.all()
            except sqlite3.Error:
                note = BUSY_NOTE
        merged = {_key(a): a for a in on_disk}
        with self._lock:
            merged.update(self._answers)
        return sorted(merged.values(), key=lambda a: (a.lesson, a.step, a.at)), note
