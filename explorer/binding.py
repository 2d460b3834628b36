"""Connect plain callbacks (session first) to Gradio events (session looked up from the request)."""
import gradio as gr

from .errors import friendly
from .session import REGISTRY


def bind(fn):
    """fn(session, *inputs) -> a Gradio handler that finds this browser session's Session."""
    safe = friendly(fn)

    def handler(request: gr.Request, *inputs):
        return safe(REGISTRY.get(request.session_hash if request else "local"), *inputs)

    handler.__name__ = fn.__name__
    handler.__doc__ = fn.__doc__
    return handler
