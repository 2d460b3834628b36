"""The lazy per-session block configuration behaves as Gradio's own (tracks upstream if Gradio changes)."""
import gradio as gr
import gradio.state_holder as state_holder
import pytest

from explorer.server.gradio_sessions import LazySessionState, install

UPSTREAM = state_holder.SessionState if state_holder.SessionState is not LazySessionState else None


@pytest.fixture(scope="module")
def demo():
    with gr.Blocks() as blocks:
        box = gr.Textbox("hello", label="Prompt")
        slider = gr.Slider(0, 3, value=1, step=1, label="Layer")
        out = gr.Markdown()
        gr.State(None)
        box.submit(lambda text, n: text * int(n), [box, slider], out)
    return blocks


def upstream_class():
    return UPSTREAM or LazySessionState.__mro__[1]


def test_same_attributes_as_gradio(demo):
    """If a Gradio upgrade adds state to SessionState, this fails instead of the app breaking."""
    assert set(vars(upstream_class()(demo))) == set(vars(LazySessionState(demo)))


def test_components_equal_gradios_once_read(demo):
    eager, lazy = upstream_class()(demo), LazySessionState(demo)
    assert list(lazy.components) == list(eager.components)


def test_builds_nothing_until_read(demo):
    lazy = LazySessionState(demo)
    assert dict.__len__(lazy.config_values) == 0
    some_id = next(iter(demo.blocks))
    assert some_id in lazy.config_values and lazy.config_values[some_id]["id"] == some_id
    assert dict.__len__(lazy.config_values) == 1


def test_value_updates_reach_the_config_like_gradios(demo):
    box_id = next(k for k, b in demo.blocks.items() if isinstance(b, gr.Textbox))
    eager, lazy = upstream_class()(demo), LazySessionState(demo)
    for session in (eager, lazy):
        session._update_value_in_config(box_id, "changed")
    assert lazy.config_values[box_id] == eager.config_values[box_id]
    assert lazy.config_values[box_id]["props"]["value"] == "changed"


def test_install_makes_new_sessions_lazy(demo):
    holder = state_holder.StateHolder()
    holder.set_blocks(demo)
    install()
    assert isinstance(holder["abc"], LazySessionState)
