"""Experiments tab, "Who wrote the answer?": the logit-attribution and patching views on the shipped
Shakespeare model, their captions from the numbers, and bad input as sentences."""
import gradio as gr
import pytest

from explorer.callbacks.attribution import activation_patching_view, example_pair, logit_attribution_view
from explorer.common.controls import PATCH_CHOICES
from explorer.common.errors import friendly
from explorer.state.session import new_session
from explorer.teaching.prompt_pairs import PAIRS
from tests.helpers import assert_plotly_would_send_the_same

pytestmark = pytest.mark.slow

CLEAN, CORRUPTED, _ = PAIRS["shakespeare"]


@pytest.fixture(scope="module")
def session():
    return new_session("shakespeare")


def test_the_parts_sum_to_the_logit_and_the_caption_says_so(session):
    parts, sources, numbers, note = logit_attribution_view(session, CLEAN, -1, "", "", False)
    for fig in (parts, sources):
        assert_plotly_would_send_the_same(fig)
    heads = parts.data[0]["z"]
    assert len(heads) == session.inspected.config.n_layers and len(heads[0]) == session.inspected.config.n_heads
    logit, total = (float(line.split("|")[2]) for line in numbers.splitlines()[2:4])
    assert total == pytest.approx(logit, abs=1e-3)
    assert f"{logit:.2f}" in note and "with the largest part, up or down" in note
    assert len(sources.data[0]["x"]) == len(CLEAN)  # a character model: one position per character


def test_an_answer_against_another_splits_the_difference(session):
    _, _, numbers, note = logit_attribution_view(session, CLEAN, -1, "e", "s", False)
    assert "the logit of e minus that of s" in numbers and "minus that of s" in note


def test_the_example_pair_restores_the_answer_where_the_prompts_differ(session):
    clean, corrupted, shown = example_pair(session)
    assert (clean, corrupted) == (CLEAN, CORRUPTED) and "Example pair" in shown
    fig, note = activation_patching_view(session, clean, corrupted, "residual stream (layer × position)", 0, "", "",
                                         False)
    assert_plotly_would_send_the_same(fig)
    restored = fig.data[0]["z"]
    first_diff = next(i for i, (a, b) in enumerate(zip(clean, corrupted)) if a != b)
    assert all(v == 0 for row in restored for v in row[:first_diff])  # identical runs before the first change
    assert max(max(row) for row in restored) > 0.5  # some single patch brings most of the clean answer back
    assert "restores at most" in note and "%" in note


@pytest.mark.parametrize("kind", list(PATCH_CHOICES))
def test_every_kind_of_patch_draws_its_grid(session, kind):
    fig, note = activation_patching_view(session, CLEAN, CORRUPTED, kind, 1, "", "", False)
    rows, cols = len(fig.data[0]["z"]), len(fig.data[0]["z"][0])
    cfg = session.inspected.config
    expected = {"resid_pre": (cfg.n_layers, len(CLEAN)), "mlp_out": (cfg.n_layers, len(CLEAN)),
                "z": (cfg.n_layers, cfg.n_heads), "z_pos": (cfg.n_heads, len(CLEAN))}[PATCH_CHOICES[kind]]
    assert (rows, cols) == expected


@pytest.mark.parametrize("call, message", [
    (lambda s: activation_patching_view(s, CLEAN, CLEAN[:-1], "residual stream (layer × position)"), "same length"),
    (lambda s: activation_patching_view(s, CLEAN, CORRUPTED, "everything"), "What to patch"),
    (lambda s: logit_attribution_view(s, CLEAN, -1, "Paris", ""), "not one"),
    (lambda s: activation_patching_view(s, CLEAN, CLEAN, "residual stream (layer × position)", 0, "O", "I"),
     "nothing to restore"),
])
def test_bad_input_gets_a_sentence(session, call, message):
    with pytest.raises(gr.Error, match=message):
        friendly(call)(session)
