"""HTTP routes of the class, beside Gradio's on the same server and port (installed as ASGI middleware, like
explorer.server.http_guard):

- `/class/latest`: the newest pushes, for every student's page (the same for everyone; no session, no names).
- `/teacher` (the page) and `/teacher/api/...`: only with the teacher's cookie, set by `/teacher?key=KEY`.
  Without it: HTTP 403 and a page saying how to get in; a wrong key is answered slowly (explorer.classroom.gate).

The teacher's actions are not Gradio endpoints, so no student can call them through the Gradio API."""
import asyncio
import json
from html import escape
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from explorer.classroom.gate import COOKIE
from explorer.classroom.room import ROOM
from explorer.common.errors import UserError

LATEST, PAGE, API = "/class/latest", "/teacher", "/teacher/api/"
MAX_BODY = 16_000  # bytes of a teacher's request body
PAGE_FILE = Path(__file__).resolve().parents[1] / "assets" / "teacher" / "page.html"
NO_STORE = {"Cache-Control": "no-store"}
COOKIE_DAYS = 1
ELSEWHERE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>The teacher page is on the hub</title>
<style>body{font:17px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}
code{background:#eef;padding:2px 4px}</style></head><body>
<h1>The teacher page is on the hub</h1><p>This explorer is one student's own, on their JupyterHub server. The class's
teacher page is a service of the hub, at <code>/services/transformer-explorer/</code> on the hub's address, for the
members of the hub's <code>instructors</code> group.</p><p>Back to <a href="./">this explorer</a>.</p></body></html>"""

LOCKED = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Teacher page: key needed</title>
<style>body{{font:17px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}}
code{{background:#eef;padding:2px 4px}}</style></head><body>
<h1>The teacher page needs its key</h1><p>{why}</p>
<p>When the server starts it prints a line <code>Teacher page: http://…/teacher?key=…</code> in its terminal. Open
that link once; this browser then remembers it for a day. To choose the key yourself, start the app with
<code>--teacher-key KEY</code> (for example <code>python app.py --teacher-key KEY</code>).</p>
<p>Students do not need this page: they use the explorer at <a href="/">/</a>.</p></body></html>"""


class ClassRoutes:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == LATEST:
            response = latest()
        elif path == PAGE or path.startswith(PAGE + "/"):
            response = await teacher(Request(scope, receive))
        else:
            return await self.app(scope, receive, send)
        await response(scope, receive, send)


def latest() -> Response:
    """{epoch, push: the newest push or None, pushes: the few newest, oldest first (a page shows them in turn),
    link: on a hub student's server, a sentence when the class's service cannot be reached, else ''}."""
    from explorer.classroom.hub_link import link_note

    push, epoch = ROOM.broadcast.latest(), ROOM.broadcast.epoch
    body = {"epoch": epoch, "push": None if push is None else push.public(epoch),
            "pushes": [p.public(epoch) for p in ROOM.broadcast.recent()], "link": link_note()}
    return JSONResponse(body, headers=NO_STORE)


async def teacher(request: Request) -> Response:
    from explorer.common import app_state

    if app_state.single_user:
        return HTMLResponse(ELSEWHERE, status_code=404, headers=NO_STORE)
    gate = ROOM.gate
    key = request.query_params.get("key")
    if request.url.path == PAGE and key is not None:
        return await _with_key(request, key)
    if not gate.cookie_matches(request.cookies.get(COOKIE)):
        return _locked("This browser has not opened the teacher page with its key yet.")
    if request.url.path == PAGE:
        return HTMLResponse(page_html(), headers=NO_STORE)
    action = ACTIONS.get((request.method, request.url.path.removeprefix(API)))
    if action is None:
        return JSONResponse({"error": "The teacher page has no such request."}, 404)
    try:
        body = await _json_body(request) if request.method == "POST" else dict(request.query_params)
        return await run_in_threadpool(action, body)
    except UserError as err:
        return JSONResponse({"error": str(err)}, 400, headers=NO_STORE)


async def _with_key(request: Request, key: str) -> Response:
    """/teacher?key=KEY: the right key sets the cookie and drops the key from the address bar; a wrong one waits."""
    gate, address = ROOM.gate, request.client.host if request.client else "?"
    if not gate.begin_attempt(address):
        return _locked("Another key from this address is still being checked: wait a few seconds, then open the "
                       "link again.", status=429)
    try:
        if not gate.key_matches(key):
            await asyncio.sleep(gate.delay_after_failure(address))
            return _locked("That key is not this server's teacher key.")
    finally:
        gate.end_attempt(address)
    gate.forgive(address)
    response = RedirectResponse(PAGE, status_code=303, headers=NO_STORE)
    response.set_cookie(COOKIE, gate.cookie_value, max_age=COOKIE_DAYS * 86400, httponly=True, samesite="strict",
                        path=PAGE)
    return response


def _locked(why: str, status: int = 403) -> Response:
    return HTMLResponse(LOCKED.format(why=escape(why)), status_code=status, headers=NO_STORE)


async def _json_body(request: Request) -> dict:
    if request.headers.get("x-teacher-page") != "1":  # sent by the page's own script, never by a plain form
        raise UserError("Send teacher requests from the teacher page.")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise UserError(f"That request is over {MAX_BODY:,} bytes.")
    return json_object(body)


def json_object(body: bytes) -> dict:
    """A teacher request's body (at most MAX_BODY bytes, read already) as a JSON object; UserError otherwise."""
    try:
        parsed = json.loads(body or b"{}")
    except ValueError:
        raise UserError("That request is not JSON.") from None
    if not isinstance(parsed, dict):
        raise UserError("That request is not a JSON object.")
    return parsed


def page_html(base: str = "", plotly_src: str = "", explorer_href: str = "./", xsrf: str = "",
              hub: bool = False) -> str:
    """The teacher page, its requests sent to {base}teacher/api/ (relative to this server's /teacher, or under the
    hub service's prefix); with hub, the actions on a student's session in this process (stop a run, open a model) are left out."""
    from explorer.tabs.live_plot import PLOTLY_JS

    fills = {"PLOTLY_SRC": plotly_src or f"gradio_api/file={PLOTLY_JS}", "API_BASE": f"{base}teacher/api/",
             "EXPLORER_HREF": explorer_href, "XSRF_TOKEN": xsrf, "HUB_MODE": "true" if hub else "false"}
    page = PAGE_FILE.read_text(encoding="utf-8")
    for name, value in fills.items():
        page = page.replace(name, escape(value))
    return page


# ------------------------------------------------------------------ the teacher's requests

def _sessions() -> list:
    from explorer.state.session import REGISTRY

    return REGISTRY.sessions()


def _class(query: dict) -> Response:
    from explorer.server.teacher_page import class_view

    return JSONResponse(class_view(_sessions(), str(query.get("figure_key", ""))[:40]), headers=NO_STORE)


def _options(_query: dict) -> Response:
    from explorer.server.teacher_page import options

    return JSONResponse(options(), headers=NO_STORE)


def _push(body: dict) -> Response:
    from explorer.server.teacher_page import push

    return JSONResponse(push(body), headers=NO_STORE)


def _stop_all(_body: dict) -> Response:
    from explorer.server.teacher_page import stop_all_runs

    return JSONResponse(stop_all_runs(_sessions()), headers=NO_STORE)


def _open(body: dict) -> Response:
    from explorer.server.teacher_page import open_student_model

    return JSONResponse(open_student_model(_sessions(), body.get("student")), headers=NO_STORE)


def _answers_csv(_query: dict) -> Response:
    from explorer.server.teacher_page import csv_of_answers

    return Response(csv_of_answers(), media_type="text/csv; charset=utf-8",
                    headers={**NO_STORE, "Content-Disposition": 'attachment; filename="answers.csv"'})


ACTIONS = {("GET", "class"): _class, ("GET", "options"): _options, ("GET", "answers.csv"): _answers_csv,
           ("POST", "push"): _push, ("POST", "stop_all"): _stop_all, ("POST", "open"): _open}
