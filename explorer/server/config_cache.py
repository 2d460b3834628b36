"""Serve the page configuration (GET /config) from memory after its first build.

Gradio rebuilds the whole app configuration for every request to /config (a deep copy of ~300 components'
settings and a walk over it to rewrite URLs: ~40 ms of the server's GIL for this app), and every page load
and every gradio_client.Client asks for it. The configuration never changes after launch except for the
root URL, which Gradio derives from the request's headers, so responses are kept per (path, headers that
decide the root URL). Requests with a query (deep links, pages) or cookies (logins) always go to Gradio.
"""
import threading

CONFIG_PATHS = ("/config", "/config/")
ROOT_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-forwarded-prefix", b"x-forwarded-port")
MAX_KEPT = 32  # distinct root URLs remembered (localhost, the LAN address, a proxy ...)


class ConfigCache:
    """Pure ASGI middleware: answers a repeated GET /config with the bytes Gradio sent the first time."""

    def __init__(self, app):
        self.app = app
        self._kept: dict[tuple, tuple[list, bytes]] = {}  # key -> (response headers, body)
        self._lock = threading.Lock()

    async def __call__(self, scope, receive, send):
        key = _cache_key(scope)
        if key is None:
            return await self.app(scope, receive, send)
        kept = self._kept.get(key)
        if kept is not None:
            headers, body = kept
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, self._recording(key, send))

    def _recording(self, key, send):
        start, parts = {}, []

        async def recording_send(message):
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
                if not message.get("more_body") and start.get("status") == 200:
                    self._keep(key, list(start.get("headers", [])), b"".join(parts))
            await send(message)

        return recording_send

    def _keep(self, key, headers, body) -> None:
        with self._lock:
            if len(self._kept) < MAX_KEPT:
                self._kept[key] = (headers, body)


def _cache_key(scope):
    """(path, root-URL headers) for a plain GET /config, or None for anything else."""
    if scope["type"] != "http" or scope.get("method") != "GET" or scope.get("path") not in CONFIG_PATHS:
        return None
    if scope.get("query_string") or scope.get("root_path"):
        return None
    headers = dict(scope.get("headers") or [])
    if b"cookie" in headers or b"authorization" in headers:
        return None
    return (scope["path"], scope.get("scheme"), *(headers.get(name) for name in ROOT_HEADERS))
