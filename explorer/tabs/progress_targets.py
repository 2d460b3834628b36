"""Where each event shows its progress: on the components it writes, never on a layout block it writes.

An event that writes a layout block (the page load and a lesson's step select a tab: `gr.Tabs(selected=...)`; a
lesson opens its accordion) makes that block one of the page's progress targets, and Gradio 6.31's page keeps every
progress target it has met. On each status change of any event after that (pending, progress, done: several per
click), the page reads the state of each target and of every component inside it: inside the Tabs, every drawn
component of every tab visited. Measured in Chromium: a lesson's Next and Back cost 3.4 CPU-s each once every tab had
been visited, against 1.5 on a fresh page; the lesson walk test paid it on every step.

`progress_on_leaves` gives such events the components they write that are neither layout blocks nor settings (the
controls a step or a link sets: a value, not a result being computed) as their progress targets
(`show_progress_on`), so their spinners show where the answer lands and the page keeps fewer targets: each one
costs a search of the page's 520 components at every status change."""
import gradio as gr
from gradio.blocks import BlockContext


def progress_on_leaves(demo: gr.Blocks, settings=()) -> int:
    """Events of demo that write a layout block and name no progress targets -> their outputs other than layout
    blocks and settings as targets. -> how many events changed."""
    changed, settings = 0, {id(block) for block in settings}
    for fn in demo.fns.values():
        if fn.show_progress_on is None and any(isinstance(block, BlockContext) for block in fn.outputs):
            fn.show_progress_on = [block for block in fn.outputs
                                   if not isinstance(block, BlockContext) and id(block) not in settings]
            changed += 1
    return changed
