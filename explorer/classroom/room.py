"""The one class this server runs: the teacher's key, what was pushed to the students, the read-only copies
waiting for the teacher, and every answer (in memory, and in the answers' file with --class-db). Set up at launch
(configure)."""
from dataclasses import dataclass, field
from typing import Optional

from explorer.classroom.answer_book import AnswerBook
from explorer.classroom.broadcast import Broadcast
from explorer.classroom.copies import PendingCopies
from explorer.classroom.gate import TeacherGate


@dataclass
class ClassRoom:
    gate: TeacherGate
    broadcast: Broadcast
    copies: PendingCopies
    store: Optional[object] = None  # explorer.classroom.answers.AnswerStore with --class-db PATH
    answers: AnswerBook = field(default_factory=AnswerBook)  # every answer, whatever became of its session


ROOM = ClassRoom(TeacherGate(), Broadcast(), PendingCopies())


def configure(teacher_key: Optional[str] = None, class_db: Optional[str] = None) -> ClassRoom:
    """A fresh class with this key (None: a generated one) and answers kept in class_db (None: memory only)."""
    from explorer.classroom.answers import AnswerStore

    if ROOM.store is not None:
        ROOM.store.close()
    ROOM.gate, ROOM.broadcast, ROOM.copies = TeacherGate(teacher_key), Broadcast(), PendingCopies()
    ROOM.store = AnswerStore(class_db) if class_db else None
    ROOM.answers = AnswerBook(ROOM.store)
    return ROOM
