"""Named controls: every link/lesson parameter is validated against its control and sets exactly that control."""
import gradio as gr
import pytest

from explorer.common.views import DEFAULT_VIEW, PAGE_PARAMS, VIEW, VIEWS
from explorer.state.shipped import shipped_models
from explorer.teaching import view_params
from explorer.ui import build_app, check_params

# parameter -> (a valid link value, the value the control receives)
VALID = {"tab": ("residual", "residual"), "prompt": ("ROMEO: hi", "ROMEO: hi"), "drop_unknown": ("yes", True),
         "layer": ("2", 2), "head": ("1", 1), "query": ("-1", -1), "temperature": ("0.75", 0.75),
         "top_k": ("20", 20), "top_p": ("0.9", 0.9), "min_p": ("0.05", 0.05), "seed": ("7", 7),
         "clean": ("The Eiffel Tower is in", "The Eiffel Tower is in"), "answer": (" Paris", " Paris"),
         "corrupted": ("The Colosseum is in", "The Colosseum is in"), "against": (" Rome", " Rome"),
         "patch": ("FFN output (layer × position)", "FFN output (layer × position)"), "heads": ("0.1", "0.1")}
INVALID = {"tab": "nowhere", "layer": "two", "head": "1.5", "query": "5000", "temperature": "9",
           "top_k": "-3", "top_p": "0.333", "min_p": "nan", "seed": "1e400", "drop_unknown": "maybe",
           "prompt": "x" * (view_params.TEXT_CAP + 1), "model": "gpt-5", "lesson": "no-such-lesson",
           "colour": "red"}


@pytest.fixture(scope="module", autouse=True)
def app():
    return build_app()




@pytest.mark.slow
def test_the_analysis_controls_are_registered():
    assert set(VALID) | {"model", "lesson"} <= set(view_params.names())
    assert view_params.CONTROLS["prompt"].component.label == "Prompt"
    layers = view_params.CONTROLS["layer"].components  # one value sets the layer of every tab that has one
    assert len(layers) >= 3 and all(c.label.startswith("Layer") for c in layers)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VALID))
def test_each_parameter_sets_its_control_and_nothing_else(name):
    text, expected = VALID[name]
    values, notes = view_params.parse_params({name: text})
    assert notes == [] and values == {name: expected}
    updates = view_params.updates_for(values)
    targets = set(map(id, view_params.CONTROLS[name].components))
    if name == "tab":
        targets |= set(map(id, view_params.TAB_TRACKER))
    assert set(map(id, updates)) == targets and set(updates) <= set(view_params.components())
    for u in updates.values():
        got = u.selected if isinstance(u, gr.Tabs) else (u if isinstance(u, str) else u["value"])
        assert got == expected


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_or_unknown_values_are_dropped_with_a_note(name):
    values, notes = view_params.parse_params({name: INVALID[name]})
    assert values == {}
    assert len(notes) == 1 and notes[0].startswith(f"Ignored {name}=")


def test_notes_say_what_would_be_accepted():
    _, notes = view_params.parse_params({"tab": "nowhere", "temperature": "9", "model": "gpt-5"})
    assert "residual" in notes[0] and "between 0 and 3" in notes[1] and shipped_models()[0] in notes[2]


def test_a_mix_keeps_the_valid_ones():
    values, notes = view_params.parse_params({"layer": "1", "head": "many", "model": shipped_models()[0]})
    assert values == {"layer": 1, "model": shipped_models()[0]} and len(notes) == 1


def test_no_parameters_change_nothing():
    assert view_params.updates_for({}) == {}


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ValueError, match="two controls"):
        view_params.register_control("layer", gr.Slider())


# ---------------------------------------------------------------- the registry of views (explorer.common.views)

def test_the_page_has_one_tab_per_view_in_the_registrys_order():
    tabs = view_params.CONTROLS["tab"].component
    assert [(tab.id, tab.label) for tab in tabs.children] == [(view.id, view.label) for view in VIEWS]
    assert tabs.selected == DEFAULT_VIEW and view_params.TAB_TRACKER[0].value == DEFAULT_VIEW


def test_a_link_opens_a_tab_by_its_views_id_and_no_other():
    for view in VIEWS:
        assert view_params.parse_params({"tab": view.id.upper()}) == ({"tab": view.id}, [])
    _, notes = view_params.parse_params({"tab": "Guide tab"})
    assert notes == [f"Ignored tab='Guide tab': choose one of {', '.join(view.id for view in VIEWS)}"]


def test_each_tab_takes_exactly_the_link_parameters_its_view_declares():
    placed = {(name, view_params.tab_of(c)) for name, control in view_params.CONTROLS.items() for c in control.components}
    declared = {(name, view.id) for view in VIEWS for name in view.params}
    assert placed == declared | {(name, None) for name in (*PAGE_PARAMS, "tab")}


def test_a_tab_registering_a_parameter_its_view_does_not_declare_stops_the_build():
    check_params(VIEW["ffn"], {"layer", "neuron"})
    with pytest.raises(RuntimeError, match=r"FFN tab registers .*'colour'.* declares \['layer', 'neuron'\] for 'ffn'"):
        check_params(VIEW["ffn"], {"layer", "neuron", "colour"})
    with pytest.raises(RuntimeError, match="Residual stream"):
        check_params(VIEW["residual"], set())


def test_the_views_that_draw_are_drawn_when_their_tab_is_selected(app):
    drawn = {app.blocks[block_id].id for fn in app.fns.values() if fn.fn is not None
             for block_id, event in fn.targets if event == "select" and isinstance(app.blocks.get(block_id), gr.Tab)}
    assert drawn == {view.id for view in VIEWS if view.draws} and "grokking" not in drawn
