"""Students' answers: the SQLite store (replace per student and step, survives a restart, thread-safe, clear error
for a bad path), checking an answer, the tally of a choice question and the CSV export."""
import csv
import io
import threading

import pytest

from explorer.classroom.answers import Answer, AnswerStore, answers_csv, check_answer, tally
from explorer.common.errors import UserError
from explorer.teaching.lessons import Question

CHOICES = ("on the diagonal", "just left of the diagonal")


def answer(student="a1b2c3", step=0, text="just left of the diagonal", at=1_700_000_000.0, lesson="attention-basics",
           name="Ada") -> Answer:
    return Answer(student, name, lesson, step, "Where is the bright square?", text, at)


@pytest.fixture
def store(tmp_path):
    kept = AnswerStore(tmp_path / "class.db")
    yield kept
    kept.close()


def test_a_new_answer_replaces_the_students_old_one_for_that_step(store):
    store.record(answer(text="on the diagonal", at=1.0))
    store.record(answer(text="just left of the diagonal", at=2.0))  # changed their mind
    store.record(answer(student="d4e5f6", name="", at=3.0))
    store.record(answer(step=1, text="n", at=0.5))
    kept = store.all()
    assert [(a.student, a.step, a.answer) for a in kept] == [
        ("a1b2c3", 0, "just left of the diagonal"), ("d4e5f6", 0, "just left of the diagonal"), ("a1b2c3", 1, "n")]
    assert kept[0] == answer(at=2.0)  # every field comes back as it went in (step an int, at a float)


def test_all_is_ordered_by_lesson_step_then_time(store):
    store.record(answer(lesson="watch-gpt-learn", step=0, at=1.0))
    store.record(answer(student="b", step=2, at=1.0))
    store.record(answer(student="c", step=0, at=9.0))
    store.record(answer(student="d", step=0, at=5.0))
    assert [(a.lesson, a.step, a.at) for a in store.all()] == [
        ("attention-basics", 0, 5.0), ("attention-basics", 0, 9.0), ("attention-basics", 2, 1.0),
        ("watch-gpt-learn", 0, 1.0)]


def test_answers_survive_closing_and_reopening_the_file(tmp_path):
    path = tmp_path / "class.db"
    first = AnswerStore(path)
    first.record(answer(text="Robert'); DROP TABLE answers;--"))  # stored as text: parameterised SQL only
    first.close()
    again = AnswerStore(path)
    assert again.all() == [answer(text="Robert'); DROP TABLE answers;--")]
    again.close()


@pytest.mark.slow
def test_threads_can_record_at_once(store):
    def student(k: int) -> None:
        for step in range(10):
            store.record(answer(student=f"s{k:02d}", step=step, at=float(step)))

    threads = [threading.Thread(target=student, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.all()) == 80


@pytest.mark.parametrize("where", ["missing-folder/class.db", ".", "not-a-database.txt"])
def test_a_path_it_cannot_use_is_a_clear_value_error(tmp_path, where):
    (tmp_path / "not-a-database.txt").write_text("just some notes, not SQLite " * 100)
    with pytest.raises(ValueError, match="Cannot keep answers in .* a folder you can write to"):
        AnswerStore(tmp_path / where)


FREE, PICK = Question("Why?"), Question("Where?", CHOICES)


def test_check_answer_keeps_a_trimmed_answer():
    assert check_answer(FREE, "  because it would see the answer \n") == "because it would see the answer"
    assert check_answer(FREE, "x" * 500) == "x" * 500
    assert check_answer(PICK, "on the diagonal") == "on the diagonal"


@pytest.mark.parametrize("question, text, words", [
    (FREE, "", "empty"),
    (FREE, "   \n", "empty"),
    (PICK, "", "empty"),
    (FREE, "x" * 501, "501 characters"),
    (PICK, "on the diagonal, I think", "Pick one of the choices: on the diagonal, just left of the diagonal"),
])
def test_check_answer_says_what_is_wrong(question, text, words):
    with pytest.raises(UserError, match=words):
        check_answer(question, text)


def test_tally_lists_every_choice_in_order_with_zeros():
    answers = [answer(text=CHOICES[1]), answer(student="b", text=CHOICES[1]), answer(student="c", text="other")]
    counts = tally(answers, CHOICES)
    assert list(counts.items()) == [("on the diagonal", 0), ("just left of the diagonal", 2)]
    assert tally([], ("a", "b", "c")) == {"a": 0, "b": 0, "c": 0}


def test_csv_round_trips_and_neutralises_formulas():
    tricky = 'a, "quoted", two\nlines'
    answers = [answer(name="=HYPERLINK(\"http://x\")", text=tricky, at=0.0),
               answer(student="b", name="", step=3, text="-1+2", at=1_700_000_000.5),
               answer(student="c", name="@me", text="+cmd"), answer(student="d", text="fine = ok")]
    rows = list(csv.reader(io.StringIO(answers_csv(answers, lambda a: {"a1b2c3": True, "b": False}.get(a.student)))))
    assert rows[0] == ["name", "student", "lesson", "step", "question", "answer", "right", "time"]
    assert rows[1] == ["'=HYPERLINK(\"http://x\")", "a1b2c3", "attention-basics", "1", "Where is the bright square?",
                       tricky, "yes", "1970-01-01T00:00:00+00:00"]  # steps from 1, as the pages number them
    assert rows[2][:2] == ["", "b"] and rows[2][3] == "4" and rows[2][5] == "'-1+2" and rows[2][6] == "no"
    assert rows[2][7] == "2023-11-14T22:13:20+00:00" and rows[3][6] == ""
    assert (rows[3][0], rows[3][5]) == ("'@me", "'+cmd") and rows[4][5] == "fine = ok"
    assert len(rows) == 5
