"""A page reload finds its session again: the browser keeps a key (gr.BrowserState), the registry maps
each page to the session that key names."""
import gradio as gr

from ..session import REGISTRY


def resume_session(browser_key, request: gr.Request) -> str:
    """-> the key the browser keeps: its old one when that session is still here, else a new one."""
    return REGISTRY.resume(request.session_hash, browser_key)


def detach_session(request: gr.Request) -> None:
    REGISTRY.detach(request.session_hash)
