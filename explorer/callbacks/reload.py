"""A page reload finds its session again: the browser keeps a key (gr.BrowserState), the registry maps
each page to the session that key names.
Imported when the page is built (Gradio reads these signatures for the gr.Request): the session registry,
which needs torch, is imported on the first call."""
import gradio as gr

from explorer.common.app_state import wait_for_warm_up


def resume_session(browser_key, request: gr.Request) -> str:
    """-> the key the browser keeps: its old one when that session is still here, else a new one."""
    wait_for_warm_up()  # torch and the models are imported by the warm-up, not beside it
    from explorer.state.session import REGISTRY

    scope = dict(getattr(request, "query_params", None) or {}).get("view")  # a notebook's view (transformer_explorer)
    return REGISTRY.resume(request.session_hash, browser_key, scope=str(scope)[:16] if scope else None)


def detach_session(request: gr.Request) -> None:
    wait_for_warm_up()
    from explorer.state.session import REGISTRY

    REGISTRY.detach(request.session_hash)
