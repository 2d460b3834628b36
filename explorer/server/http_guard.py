"""Answer calls to API functions that do not exist with 404 and a readable message instead of HTTP 500.

Gradio looks the function up inside its route handlers and lets the lookup error escape: POST
/gradio_api/call/<unknown name> raises FnIndexInferError and POST /gradio_api/queue/join with an unknown
fn_index raises KeyError; Starlette answers both with "500 Internal Server Error" and logs a traceback.
ApiGuard sits between Starlette's error handler and the routes and turns exactly those two cases into 404s.
Install it when launching: demo.launch(..., app_kwargs=guarded_app_kwargs()).

readable_input_errors() does the same for calls Gradio refuses before our callbacks see them: with show_error=False
(our own messages are gr.Error and always shown) Gradio answers its own errors with an empty message, so a raw
request with too few inputs, or with an upload naming a file on the server's disk instead of one it uploaded,
learnt nothing. They now get a sentence, never Gradio's text (which names components and server paths).
"""
import re

from gradio.exceptions import InvalidPathError
from gradio.route_utils import FnIndexInferError
from starlette.middleware import Middleware
from starlette.responses import JSONResponse

CALL, JOIN = "/gradio_api/call/", "/gradio_api/queue/join"
HOW_TO_LIST = "client.view_api() (or “Use via API” at the bottom of the page) lists the ones it has."


class ApiGuard:
    """Pure ASGI middleware (it never reads the body): other requests pass straight through."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] != "http" or scope.get("method") != "POST" or not path.startswith((CALL, JOIN)):
            return await self.app(scope, receive, send)
        started = False

        async def watching_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watching_send)
        except (FnIndexInferError, KeyError) as err:
            detail = None if started else _unknown_function(scope, path, err)
            if detail is None:
                raise
            await JSONResponse({"detail": detail}, status_code=404)(scope, receive, send)


def _unknown_function(scope, path: str, err: Exception):
    """The message for a call to a function the app lacks, or None if err means something else."""
    if isinstance(err, FnIndexInferError) and path.startswith(CALL):
        name = path[len(CALL):].split("/")[0]
        return f"This app has no API endpoint named “{name[:60]}”. {HOW_TO_LIST}"
    index = err.args[0] if isinstance(err, KeyError) and err.args else None
    # Gradio's fns[body.fn_index] is the KeyError whose key is the requested index; any other is a real bug
    if path.startswith(JOIN) and isinstance(index, int) and index not in scope["app"].get_blocks().fns:
        return f"This app has no function number {index}: call endpoints by name. {HOW_TO_LIST}"
    return None


def guarded_app_kwargs() -> dict:
    """app_kwargs for Blocks.launch() that install ApiGuard, the page-configuration cache and the class's routes
    (explorer.server.class_routes: /teacher, /class/latest) in the FastAPI app Gradio builds; behind
    jupyter-server-proxy, only requests it forwarded (explorer.server.proxy_key)."""
    from explorer.server.class_routes import ClassRoutes
    from explorer.server.config_cache import ConfigCache
    from explorer.server.proxy_key import ProxyKeyGuard

    return {"middleware": [Middleware(ProxyKeyGuard), Middleware(ConfigCache), Middleware(ApiGuard),
                           Middleware(ClassRoutes)]}


TOO_FEW = re.compile(r"didn't receive enough input values \(needed: (\d+), got: (\d+)\)")
NOT_UPLOADED = ("A file input must be a file uploaded to this server (gradio_client's handle_file(path), or the "
                "page's upload box): the server never reads a path on its own disk.")
UNREADABLE = ("The server could not run this request: check its inputs' number, order and types against the "
              f"endpoint's parameters, then try again. {HOW_TO_LIST}")


def input_error_sentence(error) -> str:
    """What a caller is told for an error Gradio raised while reading a request (not one of our gr.Errors)."""
    if isinstance(error, InvalidPathError):
        return NOT_UPLOADED
    found = TOO_FEW.search(str(error)) if isinstance(error, ValueError) else None
    if found:
        return (f"This endpoint takes {found.group(1)} inputs and got {found.group(2)}: send every one, in order "
                f"(or call it by keyword with gradio_client, which fills in the defaults). {HOW_TO_LIST}")
    return UNREADABLE


def readable_input_errors() -> None:
    """Wrap Gradio 6.31's error_payload (in gradio.utils, and the copy gradio.queueing imported) so that an error
    it would send without a message (not a gr.Error, show_error off) carries input_error_sentence instead."""
    import gradio.queueing as queueing
    import gradio.utils as utils

    original = getattr(utils.error_payload, "__wrapped__", utils.error_payload)

    def error_payload(error, show_error):
        content = original(error, show_error)
        if content.get("error") is None and error is not None:
            content.update(error=input_error_sentence(error), visible=True)
        return content

    error_payload.__wrapped__ = original
    utils.error_payload = queueing.error_payload = error_payload
