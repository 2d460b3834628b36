"""python -m bench.teacher: the teacher page's refresh while a class works (issue #22: refresh <= 1 s p95 with 30
sessions training and analysing).

bench.classroom's class (its flags and defaults: 30 sessions on models of their own, 2 training) runs on an app
started with a teacher key. Beside it a teacher logs in with the key (GET /teacher?key=KEY: 303 and the cookie) and
polls /teacher/api/class as the page does: the next request 1 s after each answer, passing back the figure_key it
was given, so the loss figure comes only when a curve changed (every poll while the trainers step). That refresh
under the class is the headline. Beside it, alone: just before the class, --sessions sessions open and idle (the
same number of rows, nobody working, no runs so no figure) and the teacher polling --alone-polls times.
(Alone cannot come after the class: a script's session is released as soon as its client closes.)"""
import http.client
import json
import os
import secrets
import statistics
import threading
import time
from contextlib import contextmanager
from http.cookies import SimpleCookie
from urllib.parse import quote, urlsplit

from gradio_client import Client

from bench import classroom
from bench.classroom_report import KB, SHOWN_ERRORS, percentile
from bench.results import Row, at_most, info, run_main
from bench.timing import print_table
from explorer.classroom.gate import COOKIE

REFRESH = 1.0  # seconds from an answer to the next request (the page's REFRESH_MS)
TARGET_P95 = 1.0  # issue #22: refresh <= 1 s p95 under the class


def parse_args(argv=None):
    p = classroom.parser()
    p.description = "Poll the teacher page's /teacher/api/class while bench.classroom's class works."
    p.add_argument("--alone-polls", type=int, default=30,
                   help="requests of the teacher alone, before the class, beside --sessions idle sessions")
    return p.parse_args(argv)


class TeacherPage:
    """The teacher's browser on one keep-alive connection: the key once for the cookie, then the class view."""

    def __init__(self, url: str, key: str, timeout: float):
        parts = urlsplit(url)
        self.host, self.port, self.timeout = parts.hostname, parts.port, timeout
        self.connection: http.client.HTTPConnection | None = None
        self.figure_key = ""
        self.cookie = self.log_in(key)

    def get(self, path: str, headers: dict | None = None) -> tuple[int, http.client.HTTPMessage, bytes]:
        """(status, headers, body). A kept-alive connection the server has closed meanwhile (idle past its
        keep-alive timeout) is retried once on a new one, as browsers do; any other failure drops it."""
        reused = self.connection is not None
        if self.connection is None:
            self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            self.connection.request("GET", path, headers=headers or {})
            response = self.connection.getresponse()
            return response.status, response.headers, response.read()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self.close()
            if reused:
                return self.get(path, headers)
            raise
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def log_in(self, key: str) -> str:
        """The cookie /teacher?key=KEY sets."""
        status, headers, _ = self.get(f"/teacher?key={quote(key)}")
        cookie = SimpleCookie(headers.get("set-cookie", "")).get(COOKIE)
        if status != 303 or cookie is None:
            raise RuntimeError(f"/teacher?key=... answered {status} without the {COOKIE} cookie")
        return cookie.value

    def refresh(self) -> dict:
        """One poll: {at, seconds (request to the last byte), bytes (the body), figure (carried it), sessions}."""
        path = f"/teacher/api/class?figure_key={quote(self.figure_key)}"
        at, start = time.time(), time.perf_counter()
        status, _, body = self.get(path, {"Cookie": f"{COOKIE}={self.cookie}"})
        took = time.perf_counter() - start
        if status != 200:
            raise RuntimeError(f"/teacher/api/class answered {status}: {body[:200]!r}")
        data = json.loads(body)
        self.figure_key = data["figure_key"]
        return {"at": at, "seconds": took, "bytes": len(body), "figure": data["figure"] is not None,
                "sessions": len(data["students"])}

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


class Polls:
    """One phase's answers and errors."""

    def __init__(self):
        self.answers: list[dict] = []
        self.errors: list[str] = []

    def poll(self, page: TeacherPage) -> None:
        try:
            self.answers.append(page.refresh())
        except Exception as err:  # any failure the page would show as "the server does not answer"
            self.errors.append(f"{type(err).__name__}: {str(err)[:200]}")


def poll_until(page: TeacherPage, polls: Polls, stop: threading.Event) -> None:
    while not stop.is_set():
        polls.poll(page)
        stop.wait(REFRESH)


def idle_sessions(url: str, count: int) -> list[Client]:
    """count browser sessions that open the app (one cheap call each) and then sit there: the class's rows."""
    clients = []
    try:
        for _ in range(count):
            clients.append(Client(url, verbose=False))
            clients[-1].predict(api_name="/train_status")
    except BaseException:
        close_all(clients)
        raise
    return clients


def close_all(clients: list[Client]) -> None:
    for client in clients:
        client.close()


def polls_alone(page: TeacherPage, url: str, args) -> Polls:
    """--alone-polls requests as the page makes them, beside --sessions idle sessions."""
    polls, clients = Polls(), idle_sessions(url, args.sessions)
    try:
        for _ in range(args.alone_polls):
            polls.poll(page)
            time.sleep(REFRESH)
    finally:
        close_all(clients)
    return polls


@contextmanager
def teacher_beside(url: str, key: str, args, phases: dict):
    """Before the class, the teacher alone (phases["alone"], see polls_alone); around it, the teacher polling as
    the page does (phases["class"])."""
    page = TeacherPage(url, key, args.call_timeout)
    print(f"the teacher alone: {args.alone_polls} polls beside {args.sessions} idle sessions ...", flush=True)
    phases["alone"], phases["class"] = polls_alone(page, url, args), Polls()
    stop = threading.Event()
    poller = threading.Thread(target=poll_until, args=(page, phases["class"], stop), name="teacher", daemon=True)
    poller.start()
    try:
        yield
    finally:
        stop.set()
        poller.join(timeout=args.call_timeout + REFRESH)
        page.close()


def refresh_numbers(answers: list[dict]) -> dict:
    """{n, p50, p95, max (s), over_1s (share), bytes (median), sessions (median, max)} of some answers."""
    seconds, listed = [a["seconds"] for a in answers], [a["sessions"] for a in answers]
    return {"n": len(answers), "p50": percentile(seconds, 50), "p95": percentile(seconds, 95), "max": max(seconds),
            "over_1s": sum(s > TARGET_P95 for s in seconds) / len(seconds),
            "bytes": statistics.median(a["bytes"] for a in answers),
            "sessions": (statistics.median(listed), max(listed))}


def phase_numbers(polls: Polls) -> dict:
    """{every answer | with figure | without figure: refresh_numbers} (kinds with answers), errors, answers."""
    kinds = {"every answer": polls.answers, "with figure": [a for a in polls.answers if a["figure"]],
             "without figure": [a for a in polls.answers if not a["figure"]]}
    return {"refresh": {kind: refresh_numbers(found) for kind, found in kinds.items() if found},
            "errors": len(polls.errors), "first_errors": polls.errors[:SHOWN_ERRORS], "answers": polls.answers}


def print_teacher_report(numbers: dict) -> None:
    headline = {phase: numbers[phase]["refresh"].get("every answer") for phase in ("class", "alone")}
    rows = [[f"{phase}, {kind}", r["n"], f"{r['p50']:.3f}", f"{r['p95']:.3f}", f"{r['max']:.3f}",
             f"{r['over_1s']:.0%}", f"{r['bytes'] / KB:,.1f}", f"{r['sessions'][0]:g} / {r['sessions'][1]}"]
            for phase in ("class", "alone") for kind, r in numbers[phase]["refresh"].items()]
    print_table(f"Teacher page: /teacher/api/class every {REFRESH:g} s after each answer; class: during bench.classroom's "
                "class; alone: before it, beside as many idle sessions",
                ["phase, answers", "n", "p50 s", "p95 s", "max s", "> 1 s", "answer kB (median)",
                 "sessions listed (median / max)"], rows)
    for phase in ("class", "alone"):
        for line in numbers[phase]["first_errors"]:
            print(f"{phase} error: {line}")
    cls, alone = headline["class"], headline["alone"]
    if cls:
        shown_alone = f"{alone['p95']:.3f} s" if alone else "not measured"
        print(f"\nrefresh under the class: p95 {cls['p95']:.3f} s (p50 {cls['p50']:.3f}, max {cls['max']:.3f}, "
              f"{cls['n']} answers, {cls['over_1s']:.0%} over 1 s); alone: p95 {shown_alone}; target p95 <= "
              f"{TARGET_P95:g} s: {'PASS' if cls['p95'] <= TARGET_P95 else 'MISS'}")
    print(f"load average before / after: {numbers['load_before']} / {numbers['load_after']}")


def teacher_rows(numbers: dict) -> list[Row]:
    """The refresh under the class against TARGET_P95 (a miss when no answer came); alone and errors inform."""
    cls, alone = (numbers.get(phase, {}).get("refresh", {}).get("every answer") for phase in ("class", "alone"))
    rows = [at_most("teacher page refresh p95 under the class", cls["p95"] if cls else float("nan"), "s", TARGET_P95)]
    if alone:
        rows.append(info("teacher page refresh p95 alone, beside idle sessions", alone["p95"], "s"))
    return rows + [info(f"teacher page errors, {phase}", numbers[phase]["errors"]) for phase in ("class", "alone")
                   if phase in numbers]


def measure(argv=None) -> list[Row]:
    args = parse_args(argv)
    key = secrets.token_urlsafe(16)
    args.app_args = f"{args.app_args} --teacher-key {key}".strip()
    phases, load_before = {}, os.getloadavg()
    class_numbers = classroom.run(args, lambda url: teacher_beside(url, key, args, phases))
    numbers = {phase: phase_numbers(polls) for phase, polls in phases.items()}
    numbers |= {"load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()]}
    print_teacher_report(numbers)
    if args.json:
        class_numbers["settings"]["app_args"] = class_numbers["settings"]["app_args"].replace(key, "KEY")
        with open(args.json, "w") as f:
            json.dump({"teacher": numbers, "classroom": class_numbers}, f, indent=1)
    return teacher_rows(numbers)


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
