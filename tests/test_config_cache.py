"""explorer.server.config_cache on a launched Gradio app: /config is built once per root URL and served from memory,
byte for byte what Gradio answers; queries, other hosts and other paths go to Gradio."""
import http.client
import json

import gradio as gr
import gradio.utils as gradio_utils
import pytest

from explorer.server.http_guard import guarded_app_kwargs
from tests.helpers import free_port

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served():
    """(port of an app launched with the cache, how many times Gradio built the configuration)."""
    builds = {"n": 0}
    with gr.Blocks() as demo:
        box = gr.Textbox("hello", label="Prompt")
        box.submit(lambda text: text.upper(), box, box, api_name="shout")
    deepcopy = gradio_utils.safe_deepcopy  # Gradio's /config handler copies the app config on every request

    def counting(obj, *args, **kwargs):
        if isinstance(obj, dict) and "components" in obj:
            builds["n"] += 1
        return deepcopy(obj, *args, **kwargs)

    gradio_utils.safe_deepcopy = counting
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        app_kwargs=guarded_app_kwargs())
    yield port, builds
    gradio_utils.safe_deepcopy = deepcopy
    demo.close()


def get(port: int, path: str, host: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers={"Host": host} if host else {})
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def test_config_is_built_once_and_served_identically(served):
    port, builds = served
    status, first = get(port, "/config")
    built = builds["n"]
    for _ in range(5):
        assert get(port, "/config") == (200, first)
    assert status == 200 and builds["n"] == built  # no rebuild for the repeats
    config = json.loads(first)
    assert any(c.get("props", {}).get("label") == "Prompt" for c in config["components"])
    assert config["root"].startswith(f"http://127.0.0.1:{port}")


def test_another_host_gets_its_own_root_url(served):
    port, _ = served
    _, local = get(port, "/config")
    _, lan = get(port, "/config", host=f"192.168.1.20:{port}")
    assert json.loads(lan)["root"].startswith(f"http://192.168.1.20:{port}")
    assert json.loads(local)["root"] != json.loads(lan)["root"]


def test_a_query_goes_to_gradio_every_time(served):
    port, builds = served
    get(port, "/config?deep_link=nothing")
    before = builds["n"]
    get(port, "/config?deep_link=nothing")
    assert builds["n"] == before + 1
