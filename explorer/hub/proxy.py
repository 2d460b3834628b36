"""The explorer as a JupyterLab launcher tile: jupyter-server-proxy reads server_config through the entry point
`jupyter_serverproxy_servers` (pyproject.toml), starts the app on the student's first visit to
/user/<name>/transformer-explorer/ and proxies it, behind the student's own Jupyter login.

The app listens on a loopback port, which every local process can reach, including a classmate's Jupyter server
on the same machine (its /proxy/<port>/ forwards to any local port). So each launch gets a new random key: the
proxy adds it to every request it forwards (request_headers_override) and the app refuses requests without it
(explorer.server.proxy_key)."""
import secrets
import sys
from pathlib import Path

from explorer.server.proxy_key import KEY_ENV, KEY_HEADER

NAME = "transformer-explorer"
ICON = Path(__file__).resolve().parents[1] / "assets" / "hub" / "icon.svg"
START_SECONDS = 120  # the longest the proxy waits for the app to answer (it answers in ~5 s; a loaded node is slower)
# Requests a page sends while nobody uses it: they must not keep the server from the hub's idle culler
BACKGROUND = [r".*/class/latest$", r".*/gradio_api/heartbeat/.*", r".*/gradio_api/queue/data.*"]


def server_config() -> dict:
    """jupyter-server-proxy's settings for the explorer ({port} and {base_url} are filled in by the proxy)."""
    key = secrets.token_urlsafe(24)
    return {
        "command": [sys.executable, "-m", "explorer.server.launch", "--single-user", "--port", "{port}",
                    "--root-path", "{base_url}" + NAME],
        "environment": {KEY_ENV: key, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1"},
        "request_headers_override": {KEY_HEADER: key},
        "timeout": START_SECONDS,
        # JupyterLab's launcher draws an icon from a URL only in its Notebook row (in "Other" the card was blank)
        "launcher_entry": {"title": "Transformer Explorer", "icon_path": str(ICON), "category": "Notebook"},
        "exclude_last_activity_patterns": BACKGROUND,
    }
