"""Answer calls to API functions that do not exist with 404 and a readable message instead of HTTP 500.

Gradio looks the function up inside its route handlers and lets the lookup error escape: POST
/gradio_api/call/<unknown name> raises FnIndexInferError and POST /gradio_api/queue/join with an unknown
fn_index raises KeyError; Starlette answers both with "500 Internal Server Error" and logs a traceback.
ApiGuard sits between Starlette's error handler and the routes and turns exactly those two cases into 404s.
Install it when launching: demo.launch(..., app_kwargs=guarded_app_kwargs()).
"""
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
    (explorer.server.class_routes: /teacher, /class/latest) in the FastAPI app Gradio builds."""
    from explorer.server.class_routes import ClassRoutes
    from explorer.server.config_cache import ConfigCache

    return {"middleware": [Middleware(ConfigCache), Middleware(ApiGuard), Middleware(ClassRoutes)]}
