"""The Sampling tab says what a student sees there: min-p has an info line and a glossary entry, the shaded
generated text has a key, and the chart's corner note gives the top token's probability as the chart draws it."""
import re

import gradio as gr
import numpy as np

from explorer.callbacks import sampling
from explorer.figures.sampling import next_token_figure, softmax
from explorer.teaching.glossary import TERMS, terms_in
from tests.helpers import PROMPT, tiny_session


def test_min_p_has_an_info_line_and_the_glossary_explains_it():
    from explorer.tabs.sampling import build_sampling_tab
    with gr.Blocks():
        _, named = build_sampling_tab(gr.Textbox(), gr.Checkbox(), gr.Markdown())
    assert "min-p" in TERMS and terms_in("Min-p (0 = off)") == ["min-p"] and terms_in("min_p: 0.1") == ["min-p"]
    assert named["min_p"].info == TERMS["min-p"][1]
    assert "top token" in named["min_p"].info and "0 turns it off" in named["min_p"].info


def test_the_shaded_text_has_a_key_from_pale_to_deep_with_the_shades_it_uses():
    _, text = sampling.steps_view(tiny_session(), PROMPT, 1.0, 0, 1.0, 0.0, 4, 0)
    key = text[text.index("Shading:"):]
    assert "probability" in key and "picked" in key
    shown = re.findall(r"background:(rgba\([^)]*\));padding[^>]*>(\d+)%", key)
    assert [int(p) for _, p in shown] == [0, 25, 50, 75, 100]
    assert [colour for colour, _ in shown] == [sampling.shade(int(p) / 100) for _, p in shown]
    assert sampling.shade(0.0) != sampling.shade(1.0)
    tokens = re.findall(r"title='p=([\d.]+)' style='background:(rgba\([^)]*\))'", text)  # the text uses the same
    assert len(tokens) == 4 and all(colour == sampling.shade(float(p)) for p, colour in tokens)


def test_the_corner_note_gives_the_top_token_after_the_temperature_and_the_models_own_labelled():
    """temperature-top-p, step 2: the chart drew e at 97% (temperature 0.3) while its note said 'e (62%)'."""
    logits = np.log([0.62, 0.2, 0.1, 0.08])
    before, after = softmax(logits), softmax(logits, 0.3)
    fig = next_token_figure(before, after, np.zeros(4, bool), list("eaio"), after_name="after temperature 0.3")
    note = fig.layout.annotations[0].text
    assert note == f"most likely: e ({after[0]:.0%} after temperature 0.3)<br>the model's own odds: 62%"
    assert f"{after[0]:.0%}" == "97%"
    same = next_token_figure(before, before, np.zeros(4, bool), list("eaio"), after_name="after temperature 1")
    assert same.layout.annotations[0].text == "most likely: e (62%)"  # nothing changed it: one number


def test_the_space_and_line_break_bars_are_labelled_with_large_symbols():
    """The tiny model's 25 characters include ' ' and '\\n': their bars read ␣ and ⏎, large (figures.visible_tick)."""
    from explorer.figures.common import axis_length, thin_mark_scale

    dist, _, _ = sampling.distribution_view(tiny_session(), PROMPT, 1.0, 0, 1.0, 0.0)
    ticks = dict(zip(dist.layout.xaxis.tickvals, dist.layout.xaxis.ticktext))
    scale = thin_mark_scale(axis_length(dist, "xaxis") / len(dist.layout.xaxis.tickvals), dist.layout.xaxis.tickfont.size)
    big = f"<span style='font-size:{scale:g}em'><b>{{}}</b></span>"  # as large as the room between bars allows
    assert scale > 1 and ticks["F"] == "F"
    assert ticks["␣"] == f"“{big.format('␣')}”" and ticks["⏎"] == f"“{big.format('⏎')}”"


def test_a_compare_row_edited_in_the_browser_reads_its_numbers_from_text():
    """An edited cell of "Settings to compare" arrives as text ("0.7"): it is read as the number it spells, and
    text that spells none is still refused by name."""
    import pytest

    from explorer.callbacks.sampling import parse_table
    from explorer.common.errors import UserError

    assert parse_table([["0.7", "5", "0.9", "0"]]) == parse_table([[0.7, 5, 0.9, 0]])
    with pytest.raises(UserError, match="Row 1"):
        parse_table([["warm", 0, 1, 0]])
