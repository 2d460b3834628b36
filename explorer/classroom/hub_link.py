"""A JupyterHub student's own server and the class's hub service (explorer.hub.service, docs/deploying.md).

Every LINK_SECONDS the server reports its student to the service (name, model, run, loss curve, the answers the
service has not confirmed yet) and gets the class's pushes back in the same reply; it keeps them in ROOM.broadcast,
so the student's page shows them exactly as in a room (explorer.tabs.class_notice polls /class/latest). The request
carries the student's own JUPYTERHUB_API_TOKEN: the service asks the hub whose token it is, so a student reports
only for themselves. When the service cannot be reached the page says so (link_note) and the student works on;
answers wait here and go with the first report that gets through."""
import json
import os
import threading
import time
import urllib.error
import urllib.request
from typing import Optional

SERVICE_ENV = "TRANSFORMER_EXPLORER_SERVICE_URL"  # the service's address as the student's server reaches it
LINK_SECONDS = 3.0
TIMEOUT_SECONDS = 5.0
DOWN_NOTE = ("Your teacher's class page cannot be reached just now: everything here works as before, and your "
             "answers reach your teacher when it is back.")

LINK: Optional["ClassLink"] = None


def hub_user() -> str:
    """The hub user this server belongs to ('' outside a hub)."""
    return os.environ.get("JUPYTERHUB_USER", "")


def link_note() -> str:
    """What the student's page says about the class's service: '' unless it cannot be reached."""
    return DOWN_NOTE if LINK is not None and LINK.down else ""


def start_class_link() -> Optional["ClassLink"]:
    """Start reporting when the hub names the service and gave this server a token; -> the link, or None."""
    global LINK
    url, token = os.environ.get(SERVICE_ENV, ""), os.environ.get("JUPYTERHUB_API_TOKEN", "")
    if not url or not token:
        return None
    LINK = ClassLink(url.rstrip("/") + "/api/report", token)
    threading.Thread(target=LINK.run, name="class-link", daemon=True).start()
    print(f"Reporting to the class's service at {url}.", flush=True)
    return LINK


class ClassLink:
    def __init__(self, report_url: str, token: str):
        self.report_url, self.token = report_url, token
        self.down = False  # the last report failed
        self.confirmed: set[tuple] = set()  # (lesson, step, at) of the answers the service has (for its epoch)
        self.epoch = ""

    def run(self) -> None:
        while True:
            self.report_once()
            time.sleep(LINK_SECONDS)

    def report_once(self) -> bool:
        """One report and the pushes it brings back -> whether the service answered."""
        body, sent = report_body(self.confirmed)
        request = urllib.request.Request(self.report_url, data=json.dumps(body).encode(), method="POST",
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as reply:
                answer = json.loads(reply.read())
        except (OSError, ValueError, urllib.error.URLError):
            self.down = True
            return False
        self.down = False
        self.receive(answer, sent)
        return True

    def receive(self, answer: dict, sent: set) -> None:
        from explorer.classroom.room import ROOM

        epoch = str(answer.get("epoch", ""))
        if epoch != self.epoch:  # the service restarted: it may have lost what it had confirmed
            self.epoch, self.confirmed = epoch, set()
        self.confirmed |= sent
        ROOM.broadcast.mirror(epoch, answer.get("pushes") or [])


def report_body(confirmed: set) -> tuple[dict, set]:
    """(the report: {name, row, curve, answers}, the keys of the answers in it). row and curve are those of one
    page (the teacher page's columns: explorer.classroom.roster); None before any page."""
    from explorer.classroom.room import ROOM
    from explorer.classroom.roster import loss_curve, student_row
    from explorer.state.session import REGISTRY

    sessions = [s for s in REGISTRY.sessions() if not s.member.teacher]
    # the page with a training run, else the one used last: a second tab does not hide the run from the teacher
    latest = max(sessions, key=lambda s: (s.workspace.run is not None, s.last_seen), default=None)
    row = curve = None
    name = hub_user()
    if latest is not None:
        name = latest.member.display_name or name
        row, curve = student_row(latest), loss_curve(latest)
    answers = [a for a in ROOM.answers.all()[0] if (a.lesson, a.step, a.at) not in confirmed]
    body = {"name": name, "row": row, "curve": None if curve is None else _listed(curve),
            "answers": [{"lesson": a.lesson, "step": a.step, "question": a.question, "answer": a.answer, "at": a.at}
                        for a in answers]}
    return body, {(a.lesson, a.step, a.at) for a in answers}


def _listed(curve: dict) -> dict:
    return {k: v.tolist() if hasattr(v, "tolist") else v for k, v in curve.items()}
