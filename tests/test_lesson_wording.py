"""What a lesson step says matches what the page shows: a box the text quotes holds that value, and a model has one
name on the page (its key only in links and lesson files)."""
import re

from explorer.common.shipped_list import PRETRAINED, display_name, model_choices, shipped_models
from explorer.teaching.lessons import read_lesson, shipped_lessons

QUOTED_HEADS = re.compile(r"\*\*Heads\*\*[^`]*`([\d.]+)`|`([\d.]+)`[^`*]*\*\*Heads\*\*")


def test_a_step_that_quotes_the_heads_box_fills_it_with_that_value():
    checked = 0
    for slug, path in shipped_lessons().items():
        for step in read_lesson(path).steps:
            quoted = {a or b for a, b in QUOTED_HEADS.findall(" ".join(step.text.split()))}
            if quoted:
                checked += 1
                assert step.settings.get("heads") in quoted, f"{slug}, {step.title!r}: text says {quoted}"
    assert checked  # who-wrote-the-answer's "Knock it out" quotes 0.1


def test_a_pretrained_model_shows_its_own_name_and_keeps_its_key_for_links():
    assert display_name("smollm2-135m") == "SmolLM2-135M-Instruct" == PRETRAINED["smollm2-135m"].short_title
    assert display_name("shakespeare") == "shakespeare"
    assert [key for _, key in model_choices()] == shipped_models()


def test_lessons_name_the_pretrained_model_by_its_one_name():
    """Lesson prose writes SmolLM2-135M-Instruct (settings and claims keep the key smollm2-135m)."""
    for slug, path in shipped_lessons().items():
        prose = [line for line in path.read_text().splitlines() if not re.match(r"(model|expect):", line)]
        for line in prose:
            words = re.sub(r"`[^`]*`", "", line)  # the key, quoted as code where a text says links use it
            names = re.findall(r"SmolLM2[\w-]*", words, re.IGNORECASE)
            assert all(n == "SmolLM2-135M-Instruct" for n in names), f"{slug}: {line!r}"
