"""Lesson files (explorer/assets/lessons/*.md): parse them and check their settings with a given validator.

A lesson is a title, optional lesson-wide settings, an optional intro, then steps. Each step is a "## "
heading, zero or more "key: value" lines (the same names and values a link's query string takes), a blank
line, and the Markdown text the student reads. A step may also ask a question ("question:", "choices:", with the
answer it expects in "correct:" and a "hint:" for a wrong one) and name buttons the player presses when the step
opens ("press:"): those keys are the step's own, not link parameters. The format is documented in docs/lessons.md.
Parsing is pure: which setting names and values are valid is asked of a `validate(key, value)` callable,
which the app builds from its registered controls (settings_validator)."""
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from explorer.common import app_state
from explorer.teaching.lesson_claims import ClaimError, parse_claim

LESSONS_DIR = Path(__file__).resolve().parents[1] / "assets" / "lessons"
# lesson-wide settings, before the first step: simple (its values), learned (a sentence for the end of the lesson),
# next (shipped lessons to go on with, separated by commas)
LESSON_SETTINGS = {"simple": ("yes", "no"), "learned": None, "next": None}
NOT_IN_STEPS = {"lesson"}  # link parameters a step may not set (a lesson cannot open another lesson)
PRESS = "press"  # buttons the player presses once a step is applied, separated by "|" (checked by validate)
# a step's own keys, never link parameters, not in its settings: the question's, and press
QUESTION_KEYS = ("question", "choices", "correct", "hint")
STEP_KEYS = (*QUESTION_KEYS, PRESS)
EXPECT = "expect"  # a step's claim about its model (explorer.teaching.lesson_claims); the one key that may repeat
MAX_QUESTION, MAX_CHOICE, CHOICES_RANGE = 300, 80, (2, 8)  # characters, characters, how many choices
MAX_SENTENCE = 300  # characters of a hint or of the lesson's "learned"
SETTING = re.compile(r"^([a-z][a-z0-9_]*)\s*:(.*)$")  # "layer: 2"; a key is a lower-case name
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')  # a double-quoted value; backslash escapes the next character
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
TAG = re.compile(r"<[A-Za-z/][^>]*>")  # Markdown would read "<EOS>" as HTML and show nothing
CODE = re.compile(r"`[^`]*`")  # inside a code span it is shown as written

Validate = Callable[[str, str], Optional[str]]  # (key, value) -> what is wrong, or None when it is fine


class LessonError(ValueError):
    """A malformed lesson file: the message names the line (and the file, when known)."""

    def __init__(self, line: int, problem: str, source: str = ""):
        self.line, self.problem, self.source = line, problem, source
        where = f"line {line}: " if line else ""  # line 0: the file as a whole (it cannot be read)
        super().__init__(f"{source + ': ' if source else ''}{where}{problem}")


@dataclass(frozen=True)
class Question:
    text: str  # what the student is asked, shown in the lesson box
    choices: tuple = ()  # of str, the answers to pick from; none: the answer is free text
    correct: str = ""  # the choice that is right ('' when the answer is not checked: free text, or it depends)
    hint: str = ""  # what the player says after a wrong choice ('' for a general "look again")

    @property
    def free(self) -> bool:
        return not self.choices

    def is_right(self, answer: str) -> Optional[bool]:
        """Whether answer is the correct choice; None when the question has no answer to check."""
        return answer.strip() == self.correct if self.correct else None


@dataclass(frozen=True)
class Step:
    title: str
    settings: dict  # parameter name -> value text, applied on entering the step; unnamed controls keep theirs
    text: str  # Markdown the student reads
    line: int  # line number of the step's "## " heading
    question: Optional[Question] = None  # what the student answers in the lesson box (answers go to the teacher)
    claims: tuple = ()  # of lesson_claims.Claim: what the step says about its model, checked by explorer.lesson_check
    press: tuple = ()  # of str, labels of the buttons the player presses once the step's settings are applied


@dataclass(frozen=True)
class Lesson:
    title: str
    steps: tuple  # of Step, at least one
    intro: str = ""  # Markdown before the first step
    simple: bool = False  # hide controls registered advanced=True while the lesson is open
    source: str = ""  # file it was read from
    learned: str = ""  # a sentence shown under the last step: what the student learned
    next: tuple = ()  # of str, slugs of shipped lessons to go on with, linked under the last step


def parse_lesson(text: str, validate: Optional[Validate] = None, source: str = "") -> Lesson:
    """The Lesson in text; LessonError naming the line when it is malformed. validate checks step settings."""
    lines = text.splitlines()
    try:
        title, i = _title(lines)
        options, i = _settings_block(lines, i, _lesson_setting)
        intro, i = _text_block(lines, i)
        steps = []
        while i < len(lines):
            step, i = _step(lines, i, validate)
            steps.append(step)
        if not steps:
            raise LessonError(len(lines), "a lesson needs at least one step: a line starting with '## '")
    except LessonError as err:
        raise LessonError(err.line, err.problem, source) from None
    simple = options.get("simple", "no") == "yes"
    following = tuple(slug.strip() for slug in options.get("next", "").split(",") if slug.strip())
    return Lesson(title, tuple(steps), intro, simple, source, options.get("learned", ""), following)


def read_lesson(path, validate: Optional[Validate] = None) -> Lesson:
    """parse_lesson on a file; a missing or unreadable file is a LessonError too."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise LessonError(0, f"cannot read the lesson file ({err.__class__.__name__}: {err})", str(path)) from None
    return parse_lesson(text, validate, str(path))


def _title(lines: list) -> tuple:
    i = _skip_blank(lines, 0)
    if i == len(lines) or not lines[i].startswith("# ") or not lines[i][2:].strip():
        raise LessonError(i + 1, "the first line must be the lesson title: '# ' and a title")
    return lines[i][2:].strip(), i + 1


def _step(lines: list, i: int, validate: Optional[Validate]) -> tuple:
    """lines[i] is a "## " heading -> (Step, index of the line after the step)."""
    heading = i + 1
    title = lines[i][3:].strip()
    if not title:
        raise LessonError(heading, "a step heading needs a title after '## '")
    where = {}  # key -> its line number, for what can only be checked once the block is read

    def check(line: int, key: str, value: str) -> None:
        where[key] = line
        _step_setting(line, key, value, validate)

    claims = []

    def claim(line: int, value: str) -> None:
        try:
            claims.append(parse_claim(value, line))
        except ClaimError as err:
            raise LessonError(line, str(err)) from None

    settings, i = _settings_block(lines, i + 1, check, strict=True, repeated={EXPECT: claim})
    question = _question(settings, where)
    start = i
    text, i = _text_block(lines, i)
    if not text:
        raise LessonError(heading, f"step {title!r} needs text to read (at least one line after its settings)")
    fenced = False  # a ``` block shows its lines as written
    for number, line in [(heading, title), *((n + 1, lines[n]) for n in range(start, i))]:
        fenced ^= line.lstrip().startswith("```")
        if not fenced:
            _shown_as_written(line, number)
    links = {key: value for key, value in settings.items() if key not in STEP_KEYS}
    return Step(title, links, text, heading, question, tuple(claims), _pressed(settings.get(PRESS, ""))), i


def _pressed(value: str) -> tuple:
    """"Split the logit | Patch" -> ("Split the logit", "Patch")."""
    return tuple(label.strip() for label in value.split("|") if label.strip())


def _shown_as_written(line: str, number: int) -> None:
    """LessonError when Markdown would swallow part of the line as an HTML tag (`<EOS>` outside backticks)."""
    tag = TAG.search(CODE.sub("", line))
    if tag:
        raise LessonError(number, f"{tag.group(0)} would be read as HTML and not shown: put it in backticks "
                                  f"(`{tag.group(0)}`)")


def _question(settings: dict, where: dict) -> Optional[Question]:
    """The step's "question:", "choices:", "correct:" and "hint:" settings -> its Question (None when it asks none)."""
    if "question" not in settings:
        for key in QUESTION_KEYS[1:]:
            if key in settings:
                raise LessonError(where[key], f"{key!r} needs a 'question' in the same step")
        return None
    text = settings["question"].strip()
    if not text:
        raise LessonError(where["question"], "the question is empty")
    _shown_as_written(text, where["question"])
    if len(text) > MAX_QUESTION:
        raise LessonError(where["question"], f"a question is at most {MAX_QUESTION} characters (this one has "
                                             f"{len(text)})")
    choices = _choices(settings["choices"], where["choices"]) if "choices" in settings else ()
    correct, hint = settings.get("correct", "").strip(), settings.get("hint", "").strip()
    if correct and correct not in choices:
        raise LessonError(where["correct"], f"'correct' must be one of the choices ({' | '.join(choices)})"
                          if choices else "'correct' needs 'choices' (a free-text answer is not checked)")
    if hint and not correct:
        raise LessonError(where["hint"], "'hint' is said after a wrong answer: it needs 'correct'")
    if len(hint) > MAX_SENTENCE:
        raise LessonError(where["hint"], f"a hint is at most {MAX_SENTENCE} characters (this one has {len(hint)})")
    return Question(text, choices, correct, hint)


def _choices(value: str, line: int) -> tuple:
    """"A | B | C" -> ("A", "B", "C"); LessonError unless there are 2 to 8 distinct, short, non-empty choices."""
    choices = tuple(choice.strip() for choice in value.split("|"))
    fewest, most = CHOICES_RANGE
    if not fewest <= len(choices) <= most:
        raise LessonError(line, f"'choices' needs {fewest} to {most} answers separated by '|' "
                                f"(found {len(choices)}); leave it out for a free-text answer")
    if not all(choices):
        raise LessonError(line, "a choice is empty (two '|' in a row, or one at an end)")
    too_long = next((c for c in choices if len(c) > MAX_CHOICE), None)
    if too_long:
        raise LessonError(line, f"a choice is at most {MAX_CHOICE} characters: {too_long[:20]!r}... has "
                                f"{len(too_long)}")
    twice = next((c for i, c in enumerate(choices) if c in choices[:i]), None)
    if twice:
        raise LessonError(line, f"the choice {twice!r} is there twice")
    return choices


def _settings_block(lines: list, i: int, check, strict: bool = False, repeated=None) -> tuple:
    """"key: value" lines from lines[i] up to the first blank line -> ({key: value}, next index). strict: once
    the block has begun, every line up to the blank line must be a setting (a step's text follows a blank).
    repeated {key: take(line, value)}: keys that may come many times, handed to take instead of the dict."""
    repeated = repeated or {}
    start = i = _skip_blank(lines, i)
    settings = {}
    while i < len(lines) and lines[i].strip():
        match = SETTING.match(lines[i].strip())
        if not match:
            if strict and i > start:
                raise LessonError(i + 1, "expected 'key: value'; leave a blank line between a step's settings "
                                         "and its text")
            break
        key = match.group(1)
        if key in repeated:  # its own grammar (quotes inside): not unquoted as a whole
            repeated[key](i + 1, match.group(2).strip())
            i += 1
            continue
        value = _value(match.group(2), i + 1)
        if key in settings:
            raise LessonError(i + 1, f"{key!r} is set twice")
        check(i + 1, key, value)
        settings[key] = value
        i += 1
    return settings, i


def _value(raw: str, line: int) -> str:
    """The text after "key:", unquoted: "  a b " keeps its spaces; \\n is a newline, \\" a quote, \\\\ a backslash."""
    raw = raw.strip()
    if raw.startswith('"'):
        quoted = QUOTED.fullmatch(raw)
        if not quoted:
            raise LessonError(line, 'a quoted value must end with a double quote (write \\" for a quote inside)')
        raw = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), quoted.group(1))
    elif not raw:
        raise LessonError(line, "this setting has no value")
    return raw


def _lesson_setting(line: int, key: str, value: str) -> None:
    if key not in LESSON_SETTINGS:
        raise LessonError(line, f"unknown lesson setting {key!r} (before the first step only: "
                                f"{', '.join(LESSON_SETTINGS)}; control settings go in a step)")
    allowed = LESSON_SETTINGS[key]
    if allowed is not None and value not in allowed:
        raise LessonError(line, f"{key} must be {' or '.join(allowed)}, not {value!r}")
    if key == "learned" and len(value) > MAX_SENTENCE:
        raise LessonError(line, f"'learned' is at most {MAX_SENTENCE} characters (this one has {len(value)})")
    if key == "next":
        unknown = [slug.strip() for slug in value.split(",") if slug.strip() not in shipped_lessons()]
        if unknown:
            raise LessonError(line, f"'next' names shipped lessons separated by commas; there is no lesson "
                                    f"{unknown[0]!r} (shipped: {', '.join(shipped_lessons())})")


def _step_setting(line: int, key: str, value: str, validate: Optional[Validate]) -> None:
    if key in NOT_IN_STEPS or key in LESSON_SETTINGS:
        raise LessonError(line, f"a step cannot set {key!r}")
    if key in QUESTION_KEYS:  # the step's own: checked by _question, never a link parameter
        return
    for item in _pressed(value) if key == PRESS else (value,):
        problem = validate(key, item) if validate else None
        if problem:
            raise LessonError(line, problem)


def _text_block(lines: list, i: int) -> tuple:
    """Markdown from lines[i] to the next step heading (not counting headings inside ``` fences)."""
    start, fenced = i, False
    while i < len(lines) and (fenced or not lines[i].startswith("## ")):
        fenced ^= lines[i].lstrip().startswith("```")
        i += 1
    return "\n".join(lines[start:i]).strip("\n"), i


def _skip_blank(lines: list, i: int) -> int:
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i


def shipped_lessons() -> dict:
    """slug -> path of every lesson in explorer/assets/lessons/, sorted by slug."""
    if not LESSONS_DIR.is_dir():
        return {}
    return {p.stem: p for p in sorted(LESSONS_DIR.glob("*.md")) if SLUG.match(p.stem)}


FILE_KEY = "file"  # the picker's value for the lesson opened with `python app.py --lesson FILE`
NO_LESSON = "Pick a lesson above: each step sets the app up for you and asks you a question."


def page_lesson(requested) -> str:
    """The lesson a page opens as it loads: its ?lesson= slug when that is a shipped lesson, else the --lesson
    file, else '' (none)."""
    return requested if requested in shipped_lessons() else FILE_KEY if app_state.lesson_file else ""


def lesson_choices() -> list[tuple[str, str]]:
    """(title, key) of every choice in the picker: none, the --lesson file, then the shipped lessons."""
    mine = [(f"{lesson_title(app_state.lesson_file)} (your file)", FILE_KEY)] if app_state.lesson_file else []
    return [("(no lesson)", ""), *mine, *((lesson_title(path), slug) for slug, path in shipped_lessons().items())]


def lesson_title(path) -> str:
    """The title line of a lesson file (for pickers), or its file name when it has none."""
    try:
        return _title(Path(path).read_text(encoding="utf-8").splitlines())[0]
    except (OSError, UnicodeDecodeError, LessonError):
        return Path(path).stem


def settings_validator(names, parse_params, buttons=()) -> Validate:
    """validate(key, value) for lesson steps: key must be one of names, and parse_params({key: value}) -- the
    link parser -- must accept the value without a note; a "press" value must be one of buttons (their labels)."""
    known = sorted(set(names) - NOT_IN_STEPS - set(STEP_KEYS))

    def validate(key: str, value: str) -> Optional[str]:
        if key == PRESS:
            return None if value in buttons else (f"a step cannot press {value!r} (it can press: "
                                                  f"{', '.join(buttons) or 'nothing'})")
        if key not in known:
            return f"unknown setting {key!r} (known: {', '.join(known)})"
        values, notes = parse_params({key: value})
        if notes or key not in values:  # a note reads "Ignored layer='9': must be between 0 and 7"
            return "; ".join(str(n).removeprefix("Ignored ") for n in notes) or f"{key}={value!r} is not valid"
        return None

    return validate
