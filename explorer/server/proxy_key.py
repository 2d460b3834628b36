"""A single-user app started by jupyter-server-proxy answers only requests the proxy forwarded: they carry the key
the proxy was given for this launch (explorer.hub.proxy sets both ends). Any other caller on the machine gets 401, the answer
Gradio's launch() accepts when it checks that its own address answers (it would stop at a 403)."""
import hmac
import os

from starlette.responses import PlainTextResponse

KEY_ENV, KEY_HEADER = "TRANSFORMER_EXPLORER_PROXY_KEY", "X-Transformer-Explorer-Key"
# Gradio's launch() asks its own server for this once, without the key (it starts the queue: nothing to read)
STARTUP = "/gradio_api/startup-events"
REFUSED = ("This explorer belongs to a JupyterHub user: open it from their Jupyter server "
           "(/user/<name>/transformer-explorer/).")


class ProxyKeyGuard:
    """ASGI middleware; a no-op when the app was not started by the proxy (no key in the environment)."""

    def __init__(self, app):
        self.app = app
        self.key = os.environ.get(KEY_ENV, "").encode()
        self.header = KEY_HEADER.lower().encode()

    async def __call__(self, scope, receive, send):
        if (self.key and scope["type"] in ("http", "websocket") and scope.get("path") != STARTUP
                and not self._carries_key(scope)):
            if scope["type"] == "websocket":
                return await send({"type": "websocket.close", "code": 1008})
            return await PlainTextResponse(REFUSED, status_code=401)(scope, receive, send)
        return await self.app(scope, receive, send)

    def _carries_key(self, scope) -> bool:
        given = next((v for k, v in scope.get("headers", ()) if k == self.header), b"")
        return hmac.compare_digest(given, self.key)
