"""The note under the header while a pretrained model opens for the first time (explorer.callbacks.models.
opening_note): shown by a quick event of its own before the long one, since a component the long event writes is
covered by Gradio's timer. The lesson player's Back and Next show it in the page, from notes their step left
(explorer.tabs.lesson_player)."""
import gradio as gr

from explorer.tabs.binding import bind

QUIET = dict(api_visibility="private", concurrency_limit=None)  # never queued behind the analyses


def opening_note_box() -> gr.Markdown:
    return gr.Markdown(visible=False, elem_id="te-opening-note")


def announced(listener, note_fn, inputs, note: gr.Markdown, **listener_args):
    """listener (a trigger such as button.click, or event.then) first shows note_fn(session, *inputs)'s note;
    -> that event: chain the long call on it, then hidden_after. listener_args: more of the listener's arguments."""
    return listener(bind(note_fn), inputs, note, **QUIET, **listener_args)


def hidden_after(event, note: gr.Markdown):
    """The note hides once event is over (done or failed); -> event, for further chaining."""
    event.then(lambda: gr.Markdown(visible=False), None, note, **QUIET)
    return event
