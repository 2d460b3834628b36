"""Where each event shows its progress: on the components it writes, never on a layout block, and on a chart or a
table only when it writes nothing else.

An event that writes a layout block (the page load and a lesson's step select a tab: `gr.Tabs(selected=...)`; a
lesson opens its accordion) makes that block one of the page's progress targets, and Gradio 6.31's page keeps every
progress target it has met. On each status change of any event after that (pending, progress, done: several per
click), the page reads the state of each target and of every component inside it: inside the Tabs, every drawn
component of every tab visited. Measured in Chromium: a lesson's Next and Back cost 3.4 CPU-s each once every tab had
been visited, against 1.5 on a fresh page; the lesson walk test paid it on every step.

`progress_on_leaves` gives such events the components they write that are neither layout blocks nor settings (the
controls a step or a link sets: a value, not a result being computed) as their progress targets
(`show_progress_on`), so their spinners show where the answer lands and the page keeps fewer targets: each one
costs a search of the page's 520 components at every status change.

A chart or a table is the costliest target of all: the page copies a target's whole value at each of those reads, and
a chart's value is its figure (every trace's numbers and labels), a table's every cell. An event that draws them
shows its progress on the other components it writes (its captions and notes, written in the same answer), or on
the first of them when it writes nothing else. Measured on the lesson walk in Chromium (13 lessons, 2 idle cores):
the page's main thread worked 180 s with every chart a target, 146 s with none, 117 s with no target at all.

An HTML block is no target either: its progress marker never shows (Generate step by step ran for 25 s on SmolLM2
with no sign of it); its table does. An event that writes only HTML names a caption (Compare's)."""
import gradio as gr
from gradio.blocks import BlockContext

BULKY = (gr.Plot, gr.Dataframe)  # a value the page copies whole at each read
SILENT = (gr.HTML,)  # Gradio 6.31's page never shows an HTML block's progress (its marker stays hidden)


def progress_on_leaves(demo: gr.Blocks, settings=()) -> int:
    """Events of demo that chose no progress targets and write a layout block, a chart or a table -> as targets,
    their outputs other than layout blocks, settings, charts and tables (else their first chart or table). -> how
    many events changed."""
    changed, settings = 0, {id(block) for block in settings}
    for fn in demo.fns.values():
        layout = any(isinstance(block, BlockContext) for block in fn.outputs)
        bulky = [block for block in fn.outputs if isinstance(block, BULKY)]
        if fn.show_progress_on is not None or not (layout or bulky):
            continue
        leaves = [block for block in fn.outputs if not isinstance(block, (BlockContext, *BULKY, *SILENT))
                  and id(block) not in settings]
        fn.show_progress_on = leaves or bulky[:1]
        changed += 1
    return changed
