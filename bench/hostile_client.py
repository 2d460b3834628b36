"""What bench.hostile_class needs beside gradio_client: a browser-like session (a page sends its key through the
app's private load event, which gradio_client cannot call, so it is sent as the page does: /queue/join by function
index), calls with a time limit, and the teacher page's requests."""
import http.client
import json
import re
import time
from urllib.parse import urlparse

from gradio_client import Client


def http_connection(url: str, timeout: float = 60.0) -> http.client.HTTPConnection:
    parts = urlparse(url)
    assert parts.hostname == "127.0.0.1"  # these raw requests never leave this machine
    return http.client.HTTPConnection("127.0.0.1", parts.port, timeout=timeout)



def raw_call(c: Client, name: str, args: list):
    """POST /gradio_api/call/<name> in c's session (JSON may hold literal NaN/Infinity), read the events:
    (True, outputs) or (False, the error message)."""
    conn = http_connection(c.src)
    try:
        body = json.dumps({"data": args, "session_hash": c.session_hash})  # NaN and Infinity stay literal
        conn.request("POST", f"/gradio_api/call/{name}", body, {"Content-Type": "application/json"})
        answer = conn.getresponse()
        body = answer.read()
        assert answer.status == 200, (answer.status, body[:300])
        conn.request("GET", f"/gradio_api/call/{name}/{json.loads(body)['event_id']}")
        stream = conn.getresponse().read().decode()
    finally:
        conn.close()
    events = re.findall(r"event: (\w+)\ndata: (.*)", stream)
    kind, data = next((k, d) for k, d in reversed(events) if k in ("complete", "error"))
    if kind == "complete":
        return True, json.loads(data)
    payload = json.loads(data)
    return False, payload.get("error") if isinstance(payload, dict) else payload


def function_index(url: str, api_name: str) -> int:
    """The dependency id of a (private) event by its function's name, from the page configuration."""
    conn = http_connection(url, 30)
    try:
        conn.request("GET", "/config")
        config = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    return next(d["id"] for d in config["dependencies"] if d.get("api_name") == api_name)


def private_call(url: str, session_hash: str, api_name: str, data: list, timeout: float = 60.0):
    """Run a private event in a session as a page would: (True, outputs) or (False, error message)."""
    conn = http_connection(url, timeout)
    try:
        body = json.dumps({"data": data, "fn_index": function_index(url, api_name), "session_hash": session_hash,
                           "trigger_id": None, "event_data": None})
        conn.request("POST", "/gradio_api/queue/join", body, {"Content-Type": "application/json"})
        event_id = json.loads(conn.getresponse().read())["event_id"]
        conn.request("GET", f"/gradio_api/queue/data?session_hash={session_hash}")
        stream = conn.getresponse()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = stream.readline().decode()
            if not line:
                break
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("event_id") == event_id and message.get("msg") == "process_completed":
                output = message.get("output", {})
                return (True, output.get("data")) if message.get("success") else (False, output.get("error"))
    finally:
        conn.close()
    return False, f"no answer within {timeout:.0f} s"


def new_client(url: str) -> Client:
    """A gradio_client Client (one session) that waits up to 2 minutes for the server's replies (a loaded
    machine makes even the page configuration slow; the cases' own calls have their own time limits)."""
    return Client(url, verbose=False, httpx_kwargs={"timeout": 120})


def browser_session(url: str) -> Client:
    """A gradio_client Client whose session is a page's: its key sent, as a browser's page does on load."""
    client = new_client(url)
    ok, outputs = private_call(url, client.session_hash, "resume_session", [""])
    assert ok and outputs and outputs[0], outputs
    return client


def timed_call(client: Client, api_name: str, timeout: float, **kwargs) -> tuple[float, bool, object]:
    """(seconds, answered with a result, the result or the error's message); a call still running at timeout
    is left to the app's end (each case runs a fresh app)."""
    began = time.monotonic()
    job = client.submit(api_name=api_name, **kwargs)
    try:
        result = job.result(timeout=timeout)
        return time.monotonic() - began, True, result
    except TimeoutError:
        return time.monotonic() - began, False, f"no answer within {timeout:.0f} s"
    except Exception as err:  # noqa: BLE001 - the app's refusal (AppError) carries its sentence
        return time.monotonic() - began, False, str(err) or repr(err)


class TeacherPage:
    """The teacher's requests, with the cookie /teacher?key=KEY sets."""

    def __init__(self, url: str, key: str):
        self.url = url
        conn = http_connection(url, 30)
        try:
            conn.request("GET", f"/teacher?key={key}")
            reply = conn.getresponse()
            reply.read()
            self.cookie = reply.getheader("set-cookie", "").split(";")[0]
        finally:
            conn.close()

    def get(self, path: str) -> tuple[int, object]:
        conn = http_connection(self.url, 30)
        try:
            conn.request("GET", path, headers={"Cookie": self.cookie})
            reply = conn.getresponse()
            body = reply.read()
        finally:
            conn.close()
        try:
            return reply.status, json.loads(body)
        except ValueError:
            return reply.status, body.decode(errors="replace")


def key_attempt(url: str, key: str) -> int:
    """The HTTP status of one /teacher?key=KEY request."""
    conn = http_connection(url, 60)
    try:
        conn.request("GET", f"/teacher?key={key}")
        reply = conn.getresponse()
        reply.read()
        return reply.status
    finally:
        conn.close()
