"""explorer.server.http_guard on a one-endpoint Gradio app: unknown API names and function indices get a 404 with a
readable message instead of HTTP 500; known ones are untouched."""
import http.client
import json

import gradio as gr
import pytest

from explorer.server.http_guard import guarded_app_kwargs
from tests.helpers import free_port


@pytest.fixture(scope="module")
def port():
    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.submit(lambda text: text.upper(), box, box, api_name="shout")
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        app_kwargs=guarded_app_kwargs())
    yield port
    demo.close()


def post(port: int, path: str, body: dict):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


@pytest.mark.slow
def test_unknown_api_name_is_a_404_naming_it(port):
    status, body = post(port, "/gradio_api/call/whisper", {"data": ["hi"]})
    assert status == 404 and "no API endpoint named “whisper”" in body["detail"]


@pytest.mark.slow
@pytest.mark.parametrize("fn_index", [99_999, -1])
def test_unknown_fn_index_is_a_404(port, fn_index):
    status, body = post(port, "/gradio_api/queue/join", {"data": ["hi"], "fn_index": fn_index, "session_hash": "s"})
    assert status == 404 and f"no function number {fn_index}" in body["detail"]


def test_known_endpoint_still_works(port):
    status, body = post(port, "/gradio_api/call/shout", {"data": ["hi"]})
    assert status == 200 and body["event_id"]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", f"/gradio_api/call/shout/{body['event_id']}")
    assert 'data: ["HI"]' in conn.getresponse().read().decode()
    conn.close()
