"""No event of the page shows its progress on a layout block, nor on a chart or a table beside other outputs: Gradio's
page re-reads every component inside a progress target on each status change of any event (a Tabs target made every
click cost more once tabs had been visited) and copies each target's value, a chart's whole figure
(explorer/tabs/progress_targets.py)."""
import gradio as gr
import pytest
from gradio.blocks import BlockContext

from explorer.tabs.progress_targets import BULKY, progress_on_leaves

pytestmark = pytest.mark.slow  # builds the app (a second)


@pytest.fixture(scope="module")
def app() -> gr.Blocks:
    from explorer.ui import build_app
    return build_app()


def targets(fn) -> list:
    return list(fn.show_progress_on) if fn.show_progress_on is not None else list(fn.outputs)


def test_no_event_of_the_page_has_a_layout_block_as_a_progress_target(app):
    layout_targets = [(fn.name, type(b).__name__) for fn in app.fns.values() for b in targets(fn)
                      if isinstance(b, BlockContext)]
    assert not layout_targets
    # the lesson's moves and the page load select a tab: they write the Tabs and the settings of the step (values,
    # not results), and show progress on the rest
    from explorer.teaching.view_params import CONTROLS
    settings = {id(c) for control in CONTROLS.values() for c in control.components}
    moves = [fn for fn in app.fns.values() if any(isinstance(b, gr.Tabs) for b in fn.outputs)]
    assert len(moves) >= 5
    for fn in moves:
        assert fn.show_progress_on == [b for b in fn.outputs
                                       if not isinstance(b, (BlockContext, *BULKY)) and id(b) not in settings]
        assert any(isinstance(b, gr.Slider) for b in fn.outputs)  # a step's layer, say: written, no spinner
        assert not any(isinstance(b, gr.Slider) for b in fn.show_progress_on)


def test_an_event_with_its_own_targets_or_none_on_a_layout_keeps_them():
    """Only events that write a layout block and chose no targets are changed; a setting written is no target."""
    with gr.Blocks() as demo:
        with gr.Tabs() as tabs, gr.Tab("one"):
            box, level, button = gr.Textbox(), gr.Slider(), gr.Button()
        button.click(lambda: (gr.Tabs(), "x", 3), None, [tabs, box, level])
        button.click(lambda: "y", None, box)
        button.click(lambda: (gr.Tabs(), "z"), None, [tabs, box], show_progress_on=[button])
    assert progress_on_leaves(demo, settings=[level]) == 1
    first, plain, chosen = demo.fns.values()
    assert first.show_progress_on == [box]
    assert plain.show_progress_on is None and chosen.show_progress_on == [button]


def test_a_view_shows_its_progress_on_its_captions_not_its_charts(app):
    """Every event that draws charts or tables shows its progress on what else it writes (its captions), or on its
    first chart when it writes nothing else; the page then never copies a figure at a status change."""
    drawing = [fn for fn in app.fns.values() if any(isinstance(b, gr.Plot) for b in fn.outputs)]
    assert len(drawing) >= 20
    for fn in drawing:
        others = [b for b in targets(fn) if not isinstance(b, BULKY)]
        assert others or len(targets(fn)) == 1, (fn.name, [type(b).__name__ for b in targets(fn)])
        assert all(b in fn.outputs for b in targets(fn))
    attention = [fn for fn in drawing if fn.api_name == "attention"]
    assert len(attention) == 1 and not any(isinstance(b, gr.Plot) for b in targets(attention[0]))
    assert any(isinstance(b, gr.Markdown) for b in targets(attention[0]))  # its caption shows the spinner


def test_a_chart_is_a_target_only_where_nothing_else_is_written():
    with gr.Blocks() as demo:
        chart, other, note, level, button = gr.Plot(), gr.Plot(), gr.Markdown(), gr.Slider(), gr.Button()
        button.click(lambda: (None, None, "x"), None, [chart, other, note])
        button.click(lambda: (None, None, 3), None, [chart, other, level])
        button.click(lambda: 3, None, level)
    assert progress_on_leaves(demo, settings=[level]) == 2
    with_note, charts_only, setting = demo.fns.values()
    assert with_note.show_progress_on == [note]
    assert charts_only.show_progress_on == [chart]
    assert setting.show_progress_on is None


def test_every_event_that_writes_html_shows_its_progress_on_something_else(app):
    """Gradio 6.31's page never shows an HTML block's progress: Compare (HTML only) and Generate step by step (HTML
    and a table) ran 25 s on SmolLM2 with no sign of it. Each event writing HTML that shows progress at all has a
    target that is not HTML: Compare its caption under the button, step by step its table."""
    writing = [fn for fn in app.fns.values() if fn.show_progress != "hidden" and fn.fn is not None
               and any(isinstance(b, gr.HTML) for b in fn.outputs)]
    silent = [fn.name for fn in writing if all(isinstance(b, gr.HTML) for b in targets(fn))]
    assert not silent
    compare = next(fn for fn in writing if fn.api_name == "compare")
    assert [type(b).__name__ for b in targets(compare)] == ["Markdown"]
    steps = next(fn for fn in writing if fn.api_name == "generate")
    assert [type(b).__name__ for b in targets(steps)] == ["Dataframe"]


def test_html_is_never_a_target_beside_other_outputs():
    with gr.Blocks() as demo:
        text, rows, note, button = gr.HTML(), gr.Dataframe(), gr.Markdown(), gr.Button()
        button.click(lambda: ("x", None), None, [text, rows])
        button.click(lambda: ("x", None, "y"), None, [text, rows, note])
    assert progress_on_leaves(demo) == 2
    table_only, with_note = demo.fns.values()
    assert table_only.show_progress_on == [rows] and with_note.show_progress_on == [note]
