"""Links without a browser: a link's query applied to a session, the selected tab's view, clicked grid heads."""
import json

import gradio as gr
import pytest

from explorer.callbacks.attention import attention_page_view, clicked_head
from explorer.callbacks.links import apply_link, shipped_name
from explorer.common.shipped_list import display_name
from explorer.state.session import new_session
from explorer.state.shipped import shipped_models
from explorer.tabs.attention import build_attention_tab
from explorer.tabs.common import shared_prompt
from explorer.tabs.links import drawn_once_loaded, selected_view
from explorer.tabs.residual import build_residual_tab
from explorer.teaching import view_params
from explorer.ui import build_app
from model_core.training.presets import get_preset
from tests.helpers import N_HEADS, N_LAYERS, PROMPT, tiny_session


@pytest.fixture(scope="module", autouse=True)
def app():
    return build_app()  # registers the controls the links name


@pytest.mark.slow
def test_a_link_opens_the_named_shipped_model_before_checking_layers():
    name = shipped_models()[-1]
    session = tiny_session()
    summary, notes, values = apply_link(session, {"model": name, "layer": "63", "head": "0", "tab": "attention"})
    assert session.inspected.name == name and shipped_name(session) == name and display_name(name) in summary
    last = session.inspected.model.cfg.n_layers - 1
    assert values == {"model": name, "layer": last, "head": 0, "tab": "attention"}
    assert notes == [f"layer=63 is past this model's last layer ({last}): showing {last}."]


@pytest.mark.slow
def test_a_link_without_a_model_keeps_the_session_model():
    session = tiny_session()
    model = session.inspected.model
    summary, notes, values = apply_link(session, {"head": "5", "prompt": PROMPT, "zoom": "3"})
    assert session.inspected.model is model and shipped_name(session) == ""  # this session's model, not a shipped one
    assert values == {"head": N_HEADS - 1, "prompt": PROMPT}
    assert len(notes) == 2 and "zoom" in notes[0] and "head=5" in notes[1]


@pytest.mark.slow
def test_gradios_own_parameters_are_left_to_gradio():
    summary, notes, values = apply_link(tiny_session(), {"__theme": "dark", "layer": "0"})
    assert notes == [] and values == {"layer": 0}


def test_the_same_shipped_model_is_not_reloaded():
    session = new_session(shipped_models()[0])
    model = session.inspected.model
    apply_link(session, {"model": shipped_models()[0]})
    assert session.inspected.model is model


def test_a_preset_fills_its_controls_and_settings_beside_it_win():
    """A lesson step "preset: seed-003" + "steps: 40": the preset's shape and data, but 40 steps."""
    _, notes, values = apply_link(tiny_session(), {"preset": "seed-003", "steps": "40", "lr": "0.001"})
    preset = get_preset("seed-003")
    assert notes == [] and values["preset"] == "seed-003"
    assert (values["steps"], values["lr"]) == (40, 0.001)  # given beside the preset
    assert values["warmup"] == preset.train["warmup_steps"] and values["batch_size"] == preset.train["batch_size"]
    assert (values["n_layers"], values["d_model"], values["norm"]) == (2, 32, "rmsnorm")
    assert (values["corpus"], values["tokenizer"]) == ("first-names", "char")
    assert set(values) <= set(view_params.names()) | {"preset"}  # every one a control the page can set


def test_clicked_grid_head_names():
    assert clicked_head("L2·H1") == (2, 1) and clicked_head("L10·H0") == (10, 0)
    for bad in ("", "L2H1", "L·H1", "L2·H1 ", None, 3, {"name": "L0·H0"}):
        assert clicked_head(bad) is None


def test_attention_page_grid_is_figure_json_naming_each_head():
    grid = json.loads(attention_page_view(tiny_session(), PROMPT, 1, 0, -1)[0])
    names = [t["name"] for t in grid["data"] if t["type"] == "heatmap"]
    assert [clicked_head(n) for n in names] == [(l, h) for l in range(N_LAYERS) for h in range(N_HEADS)]


@pytest.mark.slow
def test_selected_view_runs_only_the_selected_tab():
    with gr.Blocks():
        prompt, drop = shared_prompt()
        views = {"attention": build_attention_tab(prompt, drop)[0], "residual": build_residual_tab(prompt, drop)[0]}
    dispatch, inputs, outputs = selected_view(views)
    assert sum(c is prompt for c in inputs) == 1  # the shared prompt is one input
    result = dispatch(None, "residual", *[c.value for c in inputs])  # None: the local session
    n_attention = len(views["attention"][2])
    assert len(result) == len(outputs)
    assert all(r == gr.skip() for r in result[:n_attention])
    residual = result[n_attention:]
    assert "residual" in str(residual[-1]).lower() and all(r != gr.skip() for r in residual)  # caption, charts
    assert all(r == gr.skip() for r in dispatch(None, "guide", *[c.value for c in inputs]))


@pytest.mark.slow
def test_a_tabs_select_draws_nothing_before_the_page_has_loaded():
    """Gradio fires the selected tab's select as the page mounts, before the load steps resume the session and
    apply its link: that select must leave the tab alone, and draw once the load has run."""
    with gr.Blocks():
        prompt, drop = shared_prompt()
        loaded = gr.State(False)
        select, inputs, outputs = drawn_once_loaded(build_attention_tab(prompt, drop)[0], loaded)
    assert inputs[0] is loaded
    values = [c.value for c in inputs[1:]]
    assert select(None, False, *values) == [gr.skip()] * len(outputs)
    drawn = select(None, True, *values)
    assert len(drawn) == len(outputs) and all(r != gr.skip() for r in drawn)
