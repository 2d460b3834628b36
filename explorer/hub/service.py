"""The class's teacher page as a JupyterHub service: `python -m explorer.hub.service`, started and routed by the
hub (c.JupyterHub.services, deploy/jupyterhub/jupyterhub_config.py) at /services/transformer-explorer/.

Who may open the page is the hub's decision: the hub logs the teacher in (OAuth) and grants the service's access
scope to the group `instructors`; anyone else gets 403. Students' own servers report to `api/report` with their
JUPYTERHUB_API_TOKEN (explorer.classroom.hub_link) and get the class's pushes back; the hub says whose token it is, so a
report is filed under its owner only and a student's token opens nothing else here. The page and its requests are
the room's (explorer.server.class_routes, teacher_page): roster, loss curves, leaderboard, pushes, answers, CSV."""
import functools
import json
import os
import signal
import threading
import time
from urllib.parse import urlsplit

from jupyterhub.services.auth import HubAuth, HubOAuthCallbackHandler, HubOAuthenticated
from tornado import ioloop, web

from explorer.classroom.room import ROOM, configure
from explorer.common.errors import UserError
from explorer.hub.reports import Reports
from explorer.server import teacher_page as teacher
from explorer.server.class_routes import MAX_BODY, NO_STORE, json_object, page_html

NAME = "transformer-explorer"
CLASS_DB_ENV = "TRANSFORMER_EXPLORER_CLASS_DB"  # keep answers in this SQLite file (they survive a restart)
MAX_REPORT = 200_000  # bytes of one student's report (a loss curve of 200 points and their answers fit in 60 KB)
REPORTS = Reports()


class TeacherHandler(HubOAuthenticated, web.RequestHandler):
    """The page and its requests: logged-in hub users with the service's access scope (the instructors)."""

    def set_default_headers(self):
        for name, value in NO_STORE.items():
            self.set_header(name, value)

    def write_error(self, status_code, **kwargs):
        if status_code == 403:
            self.finish("Only the course's instructors (the hub group “instructors”) may open the teacher page; "
                        "students open the explorer from their own JupyterLab.")
        else:
            super().write_error(status_code, **kwargs)


class PageHandler(TeacherHandler):
    @web.authenticated
    def get(self):
        prefix = self.settings["prefix"]
        self.finish(page_html(base=prefix, plotly_src=prefix + "static/plotly.min.js", hub=True,
                              explorer_href=self.settings["hub_prefix"] + "user-redirect/" + NAME + "/",
                              xsrf=self.xsrf_token.decode()))


class ApiHandler(TeacherHandler):
    @web.authenticated
    def get(self, action):
        if action == "class":
            rows, curves = REPORTS.class_now()
            status = f"{len(rows)} student{'s' * (len(rows) != 1)} reporting"
            self._json(teacher.class_view_of(rows, curves, status, self.get_argument("figure_key", "")[:40]))
        elif action == "options":
            self._json(teacher.options())
        elif action == "answers.csv":
            self.set_header("Content-Type", "text/csv; charset=utf-8")
            self.set_header("Content-Disposition", 'attachment; filename="answers.csv"')
            self.finish(teacher.csv_of_answers())
        else:
            self._json({"error": "The teacher page has no such request."}, 404)

    @web.authenticated
    def post(self, action):
        if action != "push":
            return self._json({"error": "The teacher page has no such request."}, 404)
        try:
            if self.request.headers.get("X-Teacher-Page") != "1" or len(self.request.body) > MAX_BODY:
                raise UserError("Send teacher requests from the teacher page.")
            self._json(pushed(json_object(self.request.body)))
        except UserError as err:
            self._json({"error": str(err)}, 400)

    def _json(self, body: dict, status: int = 200):
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))


def pushed(body: dict) -> dict:
    """teacher_page.push, a link checked against the app's controls as the students' apps will read it."""
    if body.get("kind") == "link":
        with_the_apps_controls()
    return teacher.push(body)


_controls = threading.Lock()


def with_the_apps_controls() -> None:
    """A pushed link is checked as the students' apps will read it, against the app's controls: the page is built
    once, on the first link pushed (seconds; nothing else here needs it)."""
    from explorer.teaching.view_params import CONTROLS

    with _controls:
        if not CONTROLS:
            from explorer.server.gradio_startup import single_app_build
            from explorer.ui import build_app

            with single_app_build():
                build_app()


class ReportHandler(web.RequestHandler):
    """A student's server reports (token auth, any hub user) -> the class's pushes."""

    async def post(self):
        found = HubAuth.auth_header_pat.match(self.request.headers.get("Authorization", ""))
        user = await self.settings["hub_auth"].user_for_token(found.group(1), sync=False) if found else None
        if not user or user.get("kind", "user") != "user":
            raise web.HTTPError(403, "A report needs the student's JUPYTERHUB_API_TOKEN.")
        if len(self.request.body) > MAX_REPORT:
            raise web.HTTPError(413, f"A report is at most {MAX_REPORT:,} bytes.")
        if REPORTS.too_soon(user["name"]):
            raise web.HTTPError(429, "A student's server reports every few seconds, not faster.")
        try:
            answers = REPORTS.record(user["name"], json.loads(self.request.body))
        except ValueError as err:
            raise web.HTTPError(400, str(err)) from None
        for answer in answers:
            if answer_fits(answer):
                ROOM.answers.record(answer)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"epoch": ROOM.broadcast.epoch,
                                "pushes": [p.public(ROOM.broadcast.epoch) for p in ROOM.broadcast.history()]}))


def answer_fits(answer) -> bool:
    """Does the answer answer a question of a shipped lesson, as its checks allow? (Only those are kept.)"""
    from explorer.classroom.answers import check_answer
    from explorer.teaching.lessons import shipped_lessons

    if answer.lesson not in shipped_lessons():
        return False
    questions = questions_of(answer.lesson)
    question = questions[answer.step] if 0 <= answer.step < len(questions) else None
    try:
        return question is not None and check_answer(question, answer.answer) == answer.answer
    except UserError:
        return False


@functools.lru_cache(maxsize=64)
def questions_of(lesson: str) -> tuple:
    """Each step's Question (or None) of a shipped lesson, read once."""
    from explorer.callbacks.lessons import load_lesson

    return tuple(step.question for step in load_lesson(lesson).steps)


class PlotlyHandler(web.RequestHandler):
    def get(self):
        from explorer.tabs.live_plot import PLOTLY_JS

        self.set_header("Content-Type", "application/javascript")
        self.set_header("Cache-Control", "max-age=86400")
        self.finish(PLOTLY_JS.read_bytes())


def make_app(prefix: str, hub_prefix: str) -> web.Application:
    return web.Application([
        (prefix, PageHandler),
        (prefix + "oauth_callback", HubOAuthCallbackHandler),
        (prefix + r"teacher/api/(class|options|answers\.csv|push)", ApiHandler),
        (prefix + "api/report", ReportHandler),
        (prefix + "static/plotly.min.js", PlotlyHandler),
        (prefix.rstrip("/"), web.RedirectHandler, {"url": prefix}),
    ], cookie_secret=os.urandom(32), prefix=prefix, hub_prefix=hub_prefix, hub_auth=HubAuth(),
        max_body_size=MAX_REPORT + 1)


def stop(*_signal) -> None:
    """Write the answers still waiting for the answers file, then leave at once."""
    ROOM.answers.flush()
    os._exit(0)


def main() -> None:
    from explorer.common import app_state

    app_state.lesson_checks = False  # no controls here to check a lesson's settings against
    configure(class_db=os.environ.get(CLASS_DB_ENV) or None)
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{NAME}/")
    hub_prefix = os.environ.get("JUPYTERHUB_BASE_URL", "/").rstrip("/") + "/hub/"
    address = urlsplit(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101"))
    for sig in (signal.SIGTERM, signal.SIGINT):  # the hub stops its services so (HubAuth's thread would linger)
        signal.signal(sig, stop)
    make_app(prefix, hub_prefix).listen(address.port, address.hostname)
    print(f"Transformer Explorer's teacher page serves at {prefix} ({time.strftime('%H:%M:%S')}).", flush=True)
    ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
