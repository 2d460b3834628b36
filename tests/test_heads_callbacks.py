"""Heads tab callbacks on a tiny model: report card, induction view, examples, film strip, bad input."""
import gradio as gr
import numpy as np
import pytest

from explorer.callbacks import heads as H
from explorer.common.errors import friendly
from explorer.figures.plain import Figure
from explorer.figures.roles import REPORT_HEADERS
from tests.helpers import assert_plotly_would_send_the_same, data_session


def message(fn, *args) -> str:
    with pytest.raises(gr.Error) as info:
        friendly(fn)(*args)
    return str(info.value)


@pytest.mark.slow
def test_report_card_has_one_row_per_head_and_a_role_map():
    session = data_session()
    role_map, rows, note, loss, stripe, induction_note = H.heads_report_view(session)
    assert isinstance(role_map, Figure) and isinstance(loss, Figure) and isinstance(stripe, Figure)
    for fig in (role_map, loss, stripe):
        assert_plotly_would_send_the_same(fig)
    cfg = session.inspected.model.cfg
    assert len(rows) == cfg.n_layers * cfg.n_heads and all(len(r) == len(REPORT_HEADERS) for r in rows)
    assert np.shape(role_map.data[0].z) == (cfg.n_layers, cfg.n_heads)
    assert "tiny text" in note and "shortened to 8 random tokens" in note  # block size 16 < 64
    assert "second copy" in induction_note
    assert "no induction head yet" in induction_note  # an untrained model


def test_without_validation_text_the_report_says_so_and_examples_refuse():
    session = data_session(with_data=False)
    note = H.heads_report_view(session)[2]
    assert "no validation text" in note
    assert "validation text is unknown" in message(H.examples_view, session, "neuron", 0, 0)


def test_neuron_and_head_examples():
    session = data_session()
    html, caption, dead = H.examples_view(session, "neuron", 1, 3)
    assert html.count("<li>") == 10 and "<mark" in html
    assert caption.startswith("Neuron 3 of layer 1 fires") and "dead" in dead
    html, caption, _ = H.examples_view(session, "head", 0, 1)
    assert html.count("<li>") == 10 and "title='key'" in html
    assert caption.startswith("Head L0·H1's strongest attention weights")


def test_examples_bad_input_gets_clear_messages():
    session = data_session()
    assert "Neuron must be between 0 and 63" in message(H.examples_view, session, "neuron", 0, 64)
    assert "Head must be between 0 and 1" in message(H.examples_view, session, "head", 0, 2)
    assert "choose one of neuron, head" in message(H.examples_view, session, "cell", 0, 0)
    assert "must be a number" in message(H.examples_view, session, "neuron", 0, "abc")
    attn_only = data_session(attn_only=True)
    assert "attention-only" in message(H.examples_view, attn_only, "neuron", 0, 0)
    assert H.examples_view(attn_only, "head", 0, 0)[0].count("<li>") == 10


@pytest.mark.slow
def test_film_strip_and_role_scores_over_training():
    session = data_session(snapshots=True)
    strip, lines, frames, caption = H.film_view(session, 1, 0)
    assert len(strip.data) == 2  # one panel per snapshot
    names = {trace.name for trace in lines.data}
    assert {"induction", "previous token"} <= names
    assert len(frames.frames) == 2 and frames.layout.updatemenus[0].buttons[0].label.startswith("▶")
    assert caption.startswith("2 snapshots of L1·H0")
    assert "no training snapshots" in message(H.film_view, data_session(), 0, 0)


def test_captions_name_the_induction_head_and_when_it_formed():
    from explorer.teaching import captions_roles as C

    scores = np.array([[0.05, 0.1], [0.72, 0.2]])
    text = C.induction_caption(4.1, 1.3, scores, vocab_size=64)
    assert "first copy the loss is 4.10" in text and "second copy it is 1.30" in text
    assert "strongest induction head is L1·H0 (72%)" in text
    assert "no induction head yet" in C.induction_caption(4.1, 4.0, scores * 0.1, vocab_size=64)
    steps, induction = [0, 100, 200, 300], [0.02, 0.05, 0.6, 0.7]
    caption = C.film_caption(1, 0, steps, induction, np.array([3.0, 2.5, 2.0, 1.9]))
    assert "jumps the most between steps 100 and 200 (to 60%, where the validation loss is 2.00)" in caption
    assert "stays below 30%" in C.film_caption(1, 0, steps, [0.1] * 4, np.full(4, np.nan))
    assert "recorded before induction was tracked" in C.film_caption(1, 0, steps, None)
    assert "3 of 8 neurons never fire" in C.dead_neurons_caption(np.array([[0, 0.5, 0.2, 0], [0.1, 0, 0.3, 0.4]]))
