"""The Train tab's controls as the page builds them: what each shows (#41 student walk)."""
import gradio as gr
import pytest

from explorer.callbacks.presets import preset_control_values
from explorer.tabs import train as train_tab
from model_core.training.presets import PRESETS


def built_controls() -> dict:
    """{field: component} of the architecture and optimiser rows, built outside the app."""
    with gr.Blocks():
        arch, optim = train_tab._architecture_controls(), train_tab._optimiser_controls()
    return dict(zip((*train_tab.ARCH_FIELDS, *train_tab.OPTIM_FIELDS), (*arch, *optim)))


def test_the_dropout_slider_is_wide_enough_to_show_both_ends_of_its_range():
    """Among eight controls the Dropout slider got 160 px and Gradio cut its '0.5' to '0.': it read '0 … 0'."""
    dropout = built_controls()["dropout"]
    assert (dropout.minimum, dropout.maximum) == (0, 0.5)
    assert dropout.min_width >= train_tab.RANGE_SLIDER_PX >= 200


def test_muons_controls_show_only_while_the_optimiser_is_muon():
    """'Muon Newton–Schulz steps' showed beside the optimiser adamw, which reads neither of Muon's settings."""
    controls = built_controls()
    default = controls["optimizer"].value
    for field in train_tab.MUON_FIELDS:
        assert controls[field].visible == (default == "muon"), field
    assert [u["visible"] for u in train_tab.muon_controls("adamw")] == [False, False]
    assert [u["visible"] for u in train_tab.muon_controls("muon")] == [True, True]
    for name in PRESETS:  # a preset's optimiser brings Muon's controls, or hides them
        optimizer = preset_control_values(name)["optimizer"]
        assert [u["visible"] for u in train_tab.muon_controls(optimizer)] == [optimizer == "muon"] * 2, name


@pytest.mark.slow
def test_the_optimiser_shows_or_hides_muons_controls_on_the_page():
    from explorer.ui import build_app

    demo = build_app()
    wired = [fn for fn in demo.fns.values() if fn.name == "muon_controls"]
    assert len(wired) == 1 and [t for _, t in wired[0].targets] == ["change"]
    assert [c.label for c in wired[0].inputs] == [built_controls()["optimizer"].label]
    assert [c.label for c in wired[0].outputs] == ["Muon learning rate", "Muon Newton–Schulz steps"]
