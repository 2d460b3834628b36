"""Lesson files: the parser (line-numbered errors), the shipped lessons, and the player on the built app
(Next to the end and Back to the start, each step's settings landing on the registered controls)."""
import copy
import re

import gradio as gr
import pytest

from explorer import lessons
from explorer.common import app_state
from explorer.lessons import checked_lesson_file
from explorer.server.launch import parse_args
from explorer.state.session import REGISTRY
from explorer.teaching import view_params
from explorer.teaching.lessons import FILE_KEY, LessonError, Question, parse_lesson, read_lesson, shipped_lessons

GOOD = '''# A tiny lesson
simple: yes

Intro for the student.

## First look
tab: attention
prompt: "  two spaces\\nand a line "
layer: 1

Look at the grid.

```
## inside a code fence: not a step, and <EOS> is shown as written
```

## Second

Text only, no settings.
'''


def test_parse_a_lesson():
    lesson = parse_lesson(GOOD)
    assert (lesson.title, lesson.simple, lesson.intro) == ("A tiny lesson", True, "Intro for the student.")
    assert [s.title for s in lesson.steps] == ["First look", "Second"]
    first, second = lesson.steps
    assert first.settings == {"tab": "attention", "prompt": "  two spaces\nand a line ", "layer": "1"}
    assert first.line == 6 and "## inside a code fence" in first.text and "<EOS>" in first.text
    assert second.settings == {} and second.text == "Text only, no settings."
    assert parse_lesson("# T\n## S\nx").simple is False  # simple view is off unless asked for


# (file text, line the error must name, words the message must contain)
MALFORMED = [
    ("", 1, "title"),
    ("A lesson without a title\n## S\ntext", 1, "title"),
    ("# Title only\n\nsome intro\n", 3, "at least one step"),
    ("# T\n\n## Step\ntab: attention\n", 3, "needs text"),
    ("# T\n## Step\ntab: attention\nLook here.\n", 4, "blank line"),
    ("# T\nsimple: maybe\n## S\ntext", 2, "yes or no"),
    ("# T\ncolour: red\n## S\ntext", 2, "unknown lesson setting 'colour'"),
    ("# T\n## S\nlayer: 1\nlayer: 2\n\ntext", 4, "set twice"),
    ('# T\n## S\nprompt: "never closed\n\ntext', 3, "double quote"),
    ("# T\n## S\nseed:\n\ntext", 3, "no value"),
    ("# T\n## \ntext", 2, "title after '## '"),
    ("# T\n## S\nlesson: other\n\ntext", 3, "cannot set 'lesson'"),
    ("# T\n## One\ntext\n\n## Two\n\n## Three\nmore", 5, "'Two' needs text"),
    ("# T\n## Says awesome <EOS>\ntext", 2, "<EOS> would be read as HTML"),
    ("# T\n## S\n\nfine `<EOS>` here\nthen <b>bold</b>", 5, "<b> would be read as HTML"),
    ("# T\nnext: attention-basics, no-such-lesson\n## S\ntext", 2, "there is no lesson 'no-such-lesson'"),
    ("# T\nlearned: " + "w" * 301 + "\n## S\ntext", 2, "'learned' is at most 300 characters"),
    ("# T\n## S\nnext: attention-basics\n\ntext", 3, "a step cannot set 'next'"),
]


@pytest.mark.parametrize("text, line, words", MALFORMED)
def test_malformed_lessons_name_their_line(text, line, words):
    with pytest.raises(LessonError) as caught:
        parse_lesson(text, source="mine.md")
    assert caught.value.line == line
    assert str(caught.value).startswith(f"mine.md: line {line}: ") and words in str(caught.value)


def step_with(*settings: str):
    """The single step of a lesson whose step has these setting lines."""
    return parse_lesson("# T\n\n## S\n" + "\n".join(settings) + "\n\ntext", source="mine.md").steps[0]


def test_a_step_may_ask_a_question_with_or_without_choices():
    free = step_with("layer: 1", "question: Why would it be cheating?")
    assert free.question == Question("Why would it be cheating?") and free.question.free
    assert free.settings == {"layer": "1"}  # question and choices are not link parameters
    picked = step_with("question: Where is the square?", 'choices: " on the diagonal |left of it|T: the first "')
    assert picked.question.choices == ("on the diagonal", "left of it", "T: the first") and not picked.question.free
    assert picked.settings == {}
    assert step_with("choices: a | b", "question: Either order?").question.choices == ("a", "b")
    assert step_with("layer: 1").question is None
    eight = " | ".join("abcdefgh")
    assert len(step_with("question: q", f"choices: {eight}").question.choices) == 8


def test_question_and_choices_never_reach_the_validator():
    asked = []

    def validate(key: str, value: str) -> None:  # records what it is asked; None: the value is fine
        asked.append(key)

    parse_lesson("# T\n## S\nlayer: 1\nquestion: q?\nchoices: a | b\n\ntext", validate)
    assert asked == ["layer"]


# (setting lines of a step, starting on line 4; line the error must name; words the message must contain)
BAD_QUESTIONS = [
    (["choices: a | b"], 4, "'choices' needs a 'question'"),
    (["layer: 1", "choices: a | b"], 5, "'choices' needs a 'question'"),
    (["question: q", "choices: only one"], 5, "2 to 8 answers separated by '|' (found 1)"),
    (["question: q", "choices: " + " | ".join("abcdefghi")], 5, "2 to 8 answers separated by '|' (found 9)"),
    (["question: q", "choices: a | b | a"], 5, "the choice 'a' is there twice"),
    (["question: q", "choices: a | | b"], 5, "a choice is empty"),
    (["question: q", "choices: a |"], 5, "a choice is empty"),
    (["question: q", "choices: a | " + "b" * 81], 5, "at most 80 characters"),
    (["question: " + "w" * 301], 4, "a question is at most 300 characters (this one has 301)"),
    (['question: "  "'], 4, "the question is empty"),
    (["question: q", "question: r"], 5, "'question' is set twice"),
    (["question: q", "choices: a | b", "correct: c"], 6, "'correct' must be one of the choices (a | b)"),
    (["question: q", "correct: a"], 5, "a free-text answer is not checked"),
    (["correct: a"], 4, "'correct' needs a 'question'"),
    (["question: q", "choices: a | b", "hint: look"], 6, "'hint' is said after a wrong answer: it needs 'correct'"),
    (["question: q", "choices: a | b", "correct: a", "hint: " + "h" * 301], 7, "at most 300 characters"),
]


@pytest.mark.parametrize("settings, line, words", BAD_QUESTIONS)
def test_bad_questions_name_their_line(settings, line, words):
    with pytest.raises(LessonError) as caught:
        step_with(*settings)
    assert caught.value.line == line and words in caught.value.problem
    assert str(caught.value).startswith(f"mine.md: line {line}: ")


def test_a_question_may_name_its_correct_choice_and_a_hint():
    checked = step_with("question: Where?", "choices: on it | left of it", "correct: left of it",
                        "hint: one column before?")
    assert checked.question == Question("Where?", ("on it", "left of it"), "left of it", "one column before?")
    assert checked.settings == {}  # correct and hint are the step's own, like question and choices
    assert checked.question.is_right("left of it") is True and checked.question.is_right("on it") is False
    assert step_with("question: q", "choices: a | b").question.is_right("a") is None  # nothing to check
    assert step_with("question: Why?").question.is_right("because") is None


def test_a_step_may_press_buttons_and_a_lesson_may_say_what_was_learned():
    lesson = parse_lesson("# T\nlearned: What a logit is.\nnext: attention-basics, temperature-top-p\n\n## S\n"
                          "press: Split the logit | Patch\nlayer: 1\n\ntext")
    assert lesson.learned == "What a logit is." and lesson.next == ("attention-basics", "temperature-top-p")
    assert lesson.steps[0].press == ("Split the logit", "Patch") and lesson.steps[0].settings == {"layer": "1"}
    asked = []
    parse_lesson("# T\n## S\npress: A | B\n\ntext", lambda key, value: asked.append((key, value)))
    assert asked == [("press", "A"), ("press", "B")]  # each button checked on its own


def test_bounds_are_inclusive():
    assert len(step_with("question: " + "w" * 300).question.text) == 300
    assert step_with("question: q", "choices: a | " + "b" * 80).question.choices[1] == "b" * 80


@pytest.fixture(scope="module")
def app():
    """The built app: its registered controls are what lesson settings are checked against."""
    return build()


def build():
    from explorer.ui import build_app
    return build_app()


@pytest.mark.slow
@pytest.mark.parametrize("setting, line, words", [
    ("layr: 1", 4, "unknown setting 'layr' (known: "),
    ("layer: 99", 4, "layer"),
    ("tab: nowhere", 4, "choose one of data, train, attention"),
    ("temperature: hot", 4, "not a number"),
    ("model: no-such-model", 4, "choose one of"),
])
def test_settings_are_checked_against_the_apps_controls(app, setting, line, words):
    text = f"# T\n\n## S\n{setting}\n\ntext"
    with pytest.raises(LessonError) as caught:
        parse_lesson(text, lessons.app_validator())
    assert caught.value.line == line and words in caught.value.problem
    if "known:" in words:  # the list names the app's controls, from the same registry links use
        known = caught.value.problem.split("known: ")[1].rstrip(")").split(", ")
        assert {"layer", "head", "prompt", "tab", "model"} <= set(known) and "lesson" not in known


@pytest.mark.slow
def test_a_step_presses_only_the_buttons_the_tabs_register(app):
    pressed = parse_lesson("# T\n\n## S\npress: Split the logit\n\ntext", lessons.app_validator())
    assert pressed.steps[0].press == ("Split the logit",)
    with pytest.raises(LessonError) as caught:
        parse_lesson("# T\n\n## S\npress: Patch | Split it\n\ntext", lessons.app_validator())
    assert caught.value.line == 4 and "cannot press 'Split it' (it can press: " in str(caught.value)
    pressable = str(caught.value).split("it can press: ")[1].rstrip(")").split(", ")
    assert sorted(pressable) == ["Patch", "Split the logit", "Steer"]


PRESSED_IN_TEXT = re.compile(r"\bpress(?:es|ed)?\s+\*\*([^*]+)\*\*(\s+with\s+\*\*)?", re.IGNORECASE)


@pytest.mark.parametrize("slug", sorted(shipped_lessons()))
def test_every_button_a_step_says_to_press_is_on_the_page(app, slug):
    """A step's text names the buttons as the page labels them: how-an-induction-head-forms said "press **Show
    composition** with **K**", read as a button "Show composition with K". A setting goes before the button it is
    for ("leave **Composition** on `k` and press **Show composition**")."""
    labels = {b.value for b in app.blocks.values() if isinstance(b, gr.Button)}
    for step in read_lesson(shipped_lessons()[slug]).steps:
        for match in PRESSED_IN_TEXT.finditer(" ".join(step.text.split())):
            assert match.group(1) in labels, f"{slug}, step {step.title!r}: there is no button {match.group(1)!r}"
            assert not match.group(2), f"{slug}, step {step.title!r}: '**{match.group(1)}** with **…' reads as one name"


def test_a_preset_a_step_sets_is_counted_with_all_its_values(app):
    """seed-001's step set d_model 512 and FFN width 4 in one update, and the size line said d_mlp 1024 (the old
    width): one listener per control let the counts finish out of order. One listener counts for every control, once
    more with the final values when they change while it counts, each request stamped by the page (an older count
    never overwrites a newer one: test_app_callbacks.test_an_older_count_request_is_skipped)."""
    counting = [f for f in app.fns.values() if getattr(f.fn, "__name__", "") == "newest_param_count" and
                len(f.targets) > 1]
    assert len(counting) == 1 and counting[0].trigger_mode == "always_last"
    assert "Date.now()" in counting[0].js
    counted = {app.blocks[target[0]].label for target in counting[0].targets}
    assert {"d_model", "FFN width (× d_model)", "Layers"} <= counted


@pytest.mark.slow
def test_shipped_lessons_are_valid(app):
    found = shipped_lessons()
    general = {"attention-basics": "What does attention look at?", "watch-gpt-learn": "Watch a GPT learn",
               "temperature-top-p": "Temperature and top-p"}
    assert general.keys() <= found.keys()
    for slug, path in found.items():
        lesson = read_lesson(path, lessons.app_validator())
        assert lesson.steps and all(s.text.strip() for s in lesson.steps), slug
        if slug in general:
            assert lesson.title == general[slug] and lesson.simple
            asked = all(s.question or "?" in s.text for s in lesson.steps)
            assert asked, f"{slug}: every step asks the student a question"


def test_attention_basics_asks_its_questions_in_the_lesson_box(app):
    lesson = read_lesson(shipped_lessons()["attention-basics"], lessons.app_validator())
    assert all(s.question for s in lesson.steps)
    assert not any("**Question" in s.text for s in lesson.steps)  # asked once, in the box, not again in the text
    assert lesson.steps[0].question.choices == ("on the diagonal (the character itself)", "just left of the diagonal")
    assert sum(not s.question.free for s in lesson.steps) >= 2 and sum(s.question.free for s in lesson.steps) >= 2
    assert "tab" in lesson.steps[0].settings and "question" not in lesson.steps[0].settings


def test_check_command_reports_each_file(app, tmp_path, capsys):
    good, bad = tmp_path / "good.md", tmp_path / "bad.md"
    good.write_text(GOOD)
    bad.write_text("# Bad\n\n## S\nlayr: 1\n\ntext\n")
    assert lessons.main(["check", str(good)]) == 0
    assert lessons.main(["check", str(good), str(bad)]) == 1
    out, err = capsys.readouterr()
    assert "good.md: ok, 2 steps" in out and f"{bad}: line 4: unknown setting 'layr'" in err
    assert lessons.main(["check"]) == 2


def test_launch_flag_checks_the_lesson_file(app, tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_text("# Bad\n\n## S\nhead: -3\n\ntext\n")
    assert parse_args(["--lesson", str(bad)]).lesson == str(bad)
    with pytest.raises(SystemExit) as caught:
        checked_lesson_file(bad)
    assert "bad.md: line 4: head=" in str(caught.value)
    with pytest.raises(SystemExit, match="cannot read"):
        checked_lesson_file(tmp_path / "missing.md")


# ---- the player, through the built app's own event handlers ----

ROUND_TRIP = '''# Round trip
simple: yes

## Attention, one head
tab: attention
model: shakespeare
prompt: "To be, or not to be"
layer: 1
head: 3

Look at layer 1, head 3.

## Sampling knobs
tab: sampling
temperature: 0.3
top_p: 0.75

Question about temperature?

## Back to attention, another head
tab: attention
head: 0
query: 2

Question about head 0?
'''


class Player:
    """Calls the player's own handlers in the built app and reads their outputs by component."""

    def __init__(self, demo: gr.Blocks):
        self.buttons = {b.value: b for b in demo.blocks.values() if isinstance(b, gr.Button)}
        self.picker = next(b for b in demo.blocks.values() if isinstance(b, gr.Dropdown) and b.label == "Open a lesson")
        self.demo, self.state = demo, None

    def _event(self, block, trigger: str):
        """The event that moves the player: the trigger's own, or the one after the note it shows first (a step
        that opens a pretrained model says so before the move, explorer.tabs.opening_note)."""
        fns = self.demo.fns.values()
        first = next(f for f in fns if (block._id, trigger) in [tuple(t) for t in f.targets])
        if [o.elem_id for o in first.outputs] != ["te-opening-note"]:
            return first
        return next(f for f in fns if f.trigger_after == first._id and len(f.outputs) > 1)

    def _run(self, block, trigger: str, *inputs) -> dict:
        event = self._event(block, trigger)
        values = event.fn(None, *inputs)  # None: the test's "local" session, as bind() allows
        assert set(values) <= set(event.outputs)  # {component: update}; the ones left out keep their values
        out = {id(c): values.get(c) for c in event.outputs}
        self.state = out[id(event.outputs[0])] if event.outputs[0] in values else self.state
        return out

    def open(self, key: str) -> dict:
        return self._run(self.picker, "input", key)

    def click(self, label: str) -> dict:
        return self._run(self.buttons[label], "click", self.state)


def value_of(update):
    """The value an update sets, or the Tabs' selected id; None for gr.skip()."""
    if isinstance(update, gr.Tabs):
        return update.selected
    return update.get("value") if isinstance(update, dict) else update


def check_step(out: dict, lesson, k: int, player: Player, reset: dict = None) -> None:
    """Step k (0-based) is shown and its settings are on every component they name; reset: {name: value} the move
    also sets (a lesson's opening: the fresh values of its tabs' controls), the other controls are left alone."""
    step, n = lesson.steps[k], len(lesson.steps)
    texts = [v for v in out.values() if isinstance(v, str)]
    assert f"**Step {k + 1} of {n}: {step.title}**" in texts
    assert any(step.text in t for t in texts)
    assert out[id(player.buttons["← Back"])].interactive is (k > 0)
    assert out[id(player.buttons["Next →"])].interactive is (k < n - 1)
    values, notes = view_params.parse_params(step.settings)
    assert not notes
    for name, control in view_params.CONTROLS.items():
        for component in control.components:
            expected = values.get(name, (reset or {}).get(name))
            assert value_of(out[id(component)]) == expected, f"step {k + 1}: {name}"


def test_lesson_round_trips_through_the_player(app, tmp_path, monkeypatch):
    path = tmp_path / "round-trip.md"
    path.write_text(ROUND_TRIP)
    monkeypatch.setattr(app_state, "lesson_file", checked_lesson_file(path))
    lesson, player = read_lesson(path), Player(app)
    REGISTRY.close("local")  # a fresh session for the "local" key

    out = player.open(FILE_KEY)
    check_step(out, lesson, 0, player, reset=view_params.defaults_on({"attention", "sampling"}))
    assert any(v is True for v in out.values()), "the lesson asks for the simple view"
    assert "shakespeare" in next(v for v in out.values() if isinstance(v, str) and v.startswith("Inspecting"))
    for k in range(1, len(lesson.steps)):
        check_step(player.click("Next →"), lesson, k, player)
    assert player.click("Next →")[id(player.buttons["Next →"])].interactive is False  # stays on the last step
    assert player.state == {"lesson": FILE_KEY, "step": len(lesson.steps) - 1}
    for k in reversed(range(len(lesson.steps) - 1)):
        check_step(player.click("← Back"), lesson, k, player)
    assert player.state == {"lesson": FILE_KEY, "step": 0}


def test_a_lesson_opens_on_fresh_controls_of_its_tabs_and_the_settings_of_its_earlier_steps(app, tmp_path,
                                                                                             monkeypatch):
    """What an earlier lesson or the student left does not carry into a lesson: opening one sets every control of
    the tabs its steps show, and the prompt, to a fresh page's values, under the settings its steps up to the
    opened one leave in effect; the other tabs' controls keep theirs."""
    from explorer.callbacks.lessons import open_lesson
    path = tmp_path / "round-trip.md"
    path.write_text(ROUND_TRIP)
    monkeypatch.setattr(app_state, "lesson_file", checked_lesson_file(path))
    session = REGISTRY.get("fresh-controls")
    fresh = view_params.defaults_on({"attention", "sampling"})
    assert fresh["temperature"] == 1.0 and fresh["top_p"] == 1.0 and fresh["query"] == -1
    assert "neuron" not in fresh and "lr" not in fresh and "prompt" in fresh  # FFN and Train tabs: not shown

    first = open_lesson(session, FILE_KEY)["controls"]
    assert first["temperature"] == 1.0 and first["query"] == -1 and first["head"] == 3  # fresh, and the step's
    assert first["prompt"] == "To be, or not to be" and "neuron" not in first and "lr" not in first

    third = open_lesson(session, FILE_KEY, 2)["controls"]  # a teacher's push to step 3
    assert third["prompt"] == "To be, or not to be" and third["layer"] == 1  # from step 1, still in effect
    assert third["temperature"] == 0.3 and third["top_p"] == 0.75  # from step 2
    assert third["head"] == 0 and third["query"] == 2 and third["tab"] == "attention"  # step 3's own


def test_link_opens_a_shipped_lesson_on_step_one(app):
    from explorer.callbacks.lessons import lesson_for_page
    session = REGISTRY.get("lesson-link")
    out = lesson_for_page(session, "temperature-top-p")
    assert out["state"] == {"lesson": "temperature-top-p", "step": 0}
    assert out["counter"] == "**Step 1 of 6: The model's odds for the next character**"
    nothing = lesson_for_page(session, None)  # no ?lesson= and no --lesson: the player stays closed
    assert list(nothing) == ["picker"]  # only the picker's choices are refreshed


def test_picker_lists_the_shipped_lessons_and_the_launch_file(app, tmp_path, monkeypatch):
    from explorer.teaching.lessons import lesson_choices
    titles = dict((key, title) for title, key in lesson_choices())
    assert titles["attention-basics"] == "What does attention look at?" and titles[""] == "(no lesson)"
    path = tmp_path / "mine.md"
    path.write_text(GOOD)
    monkeypatch.setattr(app_state, "lesson_file", str(path))
    assert lesson_choices()[1] == ("A tiny lesson (your file)", FILE_KEY)


def test_advanced_controls_carry_the_class_simple_view_hides(app):
    advanced = view_params.advanced_components()
    assert advanced and all("te-advanced" in c.elem_classes for c in advanced)
    plain = [c for c in view_params.components() if c not in advanced and hasattr(c, "elem_classes")]
    assert not any("te-advanced" in (c.elem_classes or []) for c in plain)


WORDS = '''# Words
learned: What softmax does.
next: temperature-top-p

## Scores
question: Which choice?
choices: a | b
correct: b
hint: the second one.

The logits of the next token.

## Shares

Softmax turns logits into shares.
'''


def test_the_player_explains_words_once_and_ends_the_lesson(app, tmp_path, monkeypatch):
    from explorer.callbacks.lessons import move, open_lesson
    from explorer.teaching.glossary import TERMS
    path = tmp_path / "words.md"
    path.write_text(WORDS)
    monkeypatch.setattr(app_state, "lesson_file", checked_lesson_file(path))
    session = REGISTRY.get("lesson-words")
    first = open_lesson(session, FILE_KEY)
    text = first["text"]
    assert "The logits of the next token." in text
    assert f"**logit**: {TERMS['logit'][1]}" in text and "**softmax**" not in text and "End of the lesson" not in text
    last = move(session, first["state"], +1)
    text = last["text"]
    assert "Softmax turns logits" in text
    assert f"**softmax**: {TERMS['softmax'][1]}" in text and "**logit**" not in text  # explained once, where first used
    assert "**End of the lesson.** What softmax does." in text
    assert "[Temperature and top-p](?lesson=temperature-top-p)" in text
    pushed = open_lesson(session, FILE_KEY, 1)["text"]  # opened on step 2 (a link, a teacher's push): step 1 unread
    assert f"**softmax**: {TERMS['softmax'][1]}" in pushed and f"**logit**: {TERMS['logit'][1]}" in pushed


def test_a_sent_answer_is_checked_when_the_step_knows_the_right_one(app, tmp_path, monkeypatch):
    from explorer.callbacks.classroom import send_answer
    from explorer.callbacks.lessons import move, open_lesson
    path = tmp_path / "words.md"
    path.write_text(WORDS)
    monkeypatch.setattr(app_state, "lesson_file", checked_lesson_file(path))
    session = REGISTRY.get("lesson-answers")
    state = open_lesson(session, FILE_KEY)["state"]
    wrong = send_answer(session, state, "a", "")
    assert wrong.startswith("**Not quite:** the second one.") and "Sent to your teacher" in wrong
    assert send_answer(session, state, "b", "").startswith("**Right.** Sent to your teacher")
    reopened = open_lesson(session, FILE_KEY)  # the box shows the kept answer and its verdict again
    assert reopened["sent"] == "**Right.** You sent **b** to your teacher."
    free = parse_lesson("# T\n## S\nquestion: Why?\n\ntext").steps[0].question
    from explorer.callbacks.lessons import verdict
    assert verdict(free, "because") == ""  # not checked: the note only says it was sent
    assert move(session, state, +1)["state"] == {"lesson": FILE_KEY, "step": 1}


@pytest.mark.slow
def test_a_step_that_presses_split_redraws_the_split_for_its_answer(app):
    """who-wrote-the-answer's step 2 sets Answer e and Against s: the player presses Split the logit once the step is
    applied, so the charts show e − s and never step 1's split under the new values; a step that presses nothing
    changes none of those charts."""
    from explorer.callbacks.lessons import open_lesson, step_presses
    press = next(f for f in app.fns.values() if getattr(f.fn, "__name__", "") == "press")
    REGISTRY.close("local")  # the handlers' "local" session, fresh
    out = open_lesson(REGISTRY.get("local"), "who-wrote-the-answer", 1)
    state, updates = out["state"], {id(c): u for c, u in view_params.updates_for(out["controls"]).items()}
    assert step_presses(state) == ("Split the logit",) and step_presses({**state, "step": 0}) == ()
    values = [value_of(updates[id(c)]) if value_of(updates.get(id(c))) is not None else c.value
              for c in press.inputs[1:]]  # the controls as the step leaves them
    result = dict(zip(map(id, press.outputs), press.fn(None, state, *values)))
    split = view_params.ACTIONS["Split the logit"]
    caption = result[id(split.outputs[-1])]
    assert "The logit of e minus that of s" in caption and "the parts sum to" in caption
    assert all(value_of(result[id(c)]) is None for c in view_params.ACTIONS["Patch"].outputs)  # not pressed
    quiet = press.fn(None, {**state, "step": 0}, *values)
    assert all(value_of(v) is None for v in quiet)


def test_charts_a_step_may_press_are_cleared_when_their_inputs_change(app):
    """A chart drawn for other inputs never stays under new ones (a lesson step's answer, a typed prompt, a new
    model): each input of a button a step may press empties its charts, in the browser, and names the button."""
    model_info = next(b for b in app.blocks.values() if getattr(b, "elem_id", None) == "te-model-info")
    for label, action in view_params.ACTIONS.items():
        for component in [*action.inputs, model_info]:
            clears = [f for f in app.fns.values() if (component._id, "change") in [tuple(t) for t in f.targets]
                      and f.fn is None and f.js and f"press **{label}**" in f.js]
            assert len(clears) == 1 and clears[0].outputs == action.outputs, (label, component.label)


def drawn_view(demo: gr.Blocks, session_key, tab_id: str, values: dict):
    """What the view of tab tab_id draws (its select event, as the page runs it) with the controls a lesson step
    set (values {link parameter: value}; the others at their defaults); None for a tab that draws nothing."""
    tab = next((b for b in demo.blocks.values() if isinstance(b, gr.Tab) and b.id == tab_id), None)
    event = next((f for f in demo.fns.values() if tab is not None and f.fn is not None and f.inputs
                  and (tab._id, "select") in [tuple(t) for t in f.targets]), None)
    if event is None:
        return None
    named = {id(c): name for name, control in view_params.CONTROLS.items() for c in control.components}
    inputs = [values.get(named.get(id(c)), c.value) for c in event.inputs]
    request = type("Request", (), {"session_hash": session_key, "request": None})()
    return event.fn(request, *inputs)


@pytest.mark.slow
@pytest.mark.pretrained
def test_every_lesson_opens_after_every_other_lessons_last_step(app):
    """A lesson link opened after another lesson's last step (the grokking lesson left its task model open, and
    the induction lesson's link failed on it): step 1 shows, and its tab draws without an error (a tab that
    draws nothing until a button is pressed: the Attention tab, with the lesson's prompt). What a lesson
    leaves behind on the server is its session's model (the walk trains nothing), so the pairs run once per model
    a lesson ends on, for every lesson opened after it."""
    from explorer.callbacks.lessons import move, open_lesson
    from explorer.common.views import DEFAULT_VIEW

    slugs, ended = list(shipped_lessons()), {}
    for first in slugs:  # walked to its last step: the session holds what that lesson leaves behind
        REGISTRY.close("pairs")
        session = REGISTRY.get("pairs")
        state = open_lesson(session, first)["state"]
        for _ in read_lesson(shipped_lessons()[first]).steps[1:]:
            state = move(session, state, +1)["state"]
        ended.setdefault(session.inspected.shared_key or session.inspected.name, first)
    assert len(ended) >= 3, ended  # shakespeare, grokking, induction, SmolLM2: the pairs below are not all alike
    for first in ended.values():
        for then in slugs:
            REGISTRY.close("pairs")
            session = REGISTRY.get("pairs")
            state = open_lesson(session, first)["state"]
            for _ in read_lesson(shipped_lessons()[first]).steps[1:]:
                state = move(session, state, +1)["state"]
            opened = open_lesson(session, then)
            lesson = read_lesson(shipped_lessons()[then])
            assert opened["counter"] == f"**Step 1 of {len(lesson.steps)}: {lesson.steps[0].title}**"
            tab = opened["controls"].get("tab", DEFAULT_VIEW)
            drawn = drawn_view(app, "pairs", tab, opened["controls"])  # raises gr.Error when it cannot draw
            if drawn is None:  # a tab with a button to press (Data): the student's next tab reads the prompt too
                drawn = drawn_view(app, "pairs", DEFAULT_VIEW, opened["controls"])
            assert drawn is None or any(v is not None for v in drawn), (first, then)


def test_a_lesson_opened_while_a_run_goes_or_waits_says_to_stop_it_first(app):
    """Its Start would be refused while the run goes: the lesson box says so before the student gets there."""
    from types import SimpleNamespace

    from explorer.callbacks.lessons import open_lesson
    REGISTRY.close("lesson-run")
    session = REGISTRY.get("lesson-run")
    assert "still going" not in open_lesson(session, "grokking")["text"]
    session.workspace.run = SimpleNamespace(active=True, corpus="shakespeare",
                                            progress=SimpleNamespace(requested="running", step=850))
    text = open_lesson(session, "grokking")["text"]
    assert "Your earlier training run is still going, at step 850." in text and "press **Stop**" in text
    session.workspace.run.progress.requested = "paused"  # a paused run holds Start back too
    text = open_lesson(session, "grokking")["text"]
    assert "Your earlier training run is paused (the server stops a run paused for 5 minutes), at step 850." in text
    assert "press **Stop**" in text  # what the status line says when it does is not contradicted
    session.workspace.run.progress.requested = "stopped"  # stopping: Start works once it has ended
    assert "still going" not in open_lesson(session, "grokking")["text"]
    session.workspace.run = None


def test_a_refused_move_stays_in_the_lesson_box(app):
    """Next with no lesson open (a reload that lost it, say) says why in the lesson box, not in a toast."""
    player = Player(app)
    player.state = None
    out = player.click("Next →")
    assert any(isinstance(v, str) and v.startswith("**That did not work:** Open a lesson first") for v in out.values())


def test_a_pushed_step_asks_before_it_sets_aside_a_model_that_cannot_read_the_lesson(app):
    """The teacher's push of a step that names no model still asks the student first when opening it would set
    their own model aside (a task model cannot read the lesson's text), as for a step that names one."""
    from explorer.callbacks.classroom import replacement_question
    from explorer.classroom.broadcast import Push
    from explorer.state.shipped import shipped_template
    from model_core.checkpoints.checkpoint import Checkpoint

    REGISTRY.close("pushed")
    session = REGISTRY.get("pushed")
    push = Push(id=1, kind="step", text="step 1", lesson="watch-gpt-learn", step=0)
    grokking = shipped_template("grokking")
    session.inspected.use(Checkpoint(copy.deepcopy(grokking.model), grokking.tokenizer), "my grokking run")
    assert "in place of the model you are inspecting now (my grokking run)" in replacement_question(session, push)
    session.inspected.use_shipped("grokking")  # a shipped model is kept nowhere but is lost to nobody
    assert replacement_question(session, push) == ""


def test_a_lesson_that_sets_aside_the_students_model_says_which_and_why(app):
    from explorer.callbacks.lessons import model_for_opening
    from explorer.state.shipped import shipped_template
    from model_core.checkpoints.checkpoint import Checkpoint

    REGISTRY.close("aside")
    session = REGISTRY.get("aside")
    grokking = shipped_template("grokking")
    session.inspected.use(Checkpoint(copy.deepcopy(grokking.model), grokking.tokenizer), "my grokking run")
    steps = read_lesson(shipped_lessons()["attention-basics"]).steps
    note = model_for_opening(session, steps, 1)  # step 2 names no model: the lesson's own opens
    assert note == ["The model you had open (my grokking run) cannot read this step's text, so the lesson opened the "
                    "shipped shakespeare model in its place."]
    assert session.inspected.shared_key == "shipped:shakespeare"
    assert model_for_opening(session, steps, 1) == []  # a shipped model set aside is lost to nobody: no note
