"""The shipped one-machine JupyterHub (deploy/jupyterhub/jupyterhub_config.py) on loopback, for the hub test and
benchmark: started as docs/deploying.md says, its users logged in through the hub's own login form, and ended with
everything it started (the hub stops its servers and the service; what is left after that is killed)."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from bench.server_process import ROOT, descendants, free_port, process_key

CONFIG = ROOT / "deploy" / "jupyterhub" / "jupyterhub_config.py"
PROXY = ROOT / ".venv" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"  # `make test` installs it
SERVICE = "transformer-explorer"
START_SECONDS = 60.0
OPEN_SECONDS = 180.0  # a student's server and their explorer, started on their first visit


def proxy_installed() -> bool:
    return PROXY.exists() or shutil.which("configurable-http-proxy") is not None


class LocalHub:
    def __init__(self, folder: Path, instructors: tuple[str, ...] = ("prof",)):
        self.folder, self.instructors = Path(folder), instructors
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.seen: dict[tuple, None] = {}  # every process below the hub we saw (ended on the way out)
        self.leftover: list[int] = []  # those still running after the hub stopped (then killed)

    def __enter__(self) -> "LocalHub":
        ports = {name: str(free_port()) for name in ("SERVICE_PORT", "HUB_API_PORT", "PROXY_API_PORT")}
        env = {**os.environ, "TRANSFORMER_EXPLORER_INSTRUCTORS": ",".join(self.instructors), "PYTHONUNBUFFERED": "1",
               **{f"TRANSFORMER_EXPLORER_{k}": v for k, v in ports.items()}}
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [str(Path(sys.executable).parent / "jupyterhub"), "-f", str(CONFIG), "--ip", "127.0.0.1",
                 "--port", str(self.port), "--JupyterHub.authenticator_class=dummy"],
                cwd=self.folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_until_running()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    @property
    def log_path(self) -> Path:
        return self.folder / "hub.log"

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def _wait_until_running(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while "JupyterHub is now running" not in self.log_path.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the hub did not start:\n{self.log_tail()}")
            time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        self.remember_processes()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the hub stops every server and its service
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.leftover = [pid for pid, started in self.seen if process_key(pid) == (pid, started)]
        for pid in self.leftover:  # the hub should have ended them: the hub test says so
            os.kill(pid, signal.SIGKILL)

    def remember_processes(self) -> list[int]:
        """The hub's processes now (servers, apps, training children, the proxy, the service)."""
        pids = descendants(self.proc.pid) if self.proc is not None else []
        for pid in pids:
            key = process_key(pid)
            if key:
                self.seen.setdefault(key)
        return pids

    # ------------------------------------------------------------------ users
    def login(self, name: str, next_path: str = "") -> requests.Session:
        """A browser-like session logged in through the hub's login form (any password: the dummy authenticator).
        next_path "" goes on to the user's server (the hub spawns it); give another path to spawn nothing."""
        session = requests.Session()
        form = session.get(f"{self.url}/hub/login")
        xsrf = session.cookies.get("_xsrf") or re.search(r'name="_xsrf" value="([^"]+)"', form.text).group(1)
        reply = session.post(f"{self.url}/hub/login", params={"next": next_path},
                             data={"username": name, "password": "any", "_xsrf": xsrf}, allow_redirects=False)
        if reply.status_code != 302:
            raise RuntimeError(f"{name} could not log in: HTTP {reply.status_code}")
        return session

    def explorer_url(self, name: str) -> str:
        return f"{self.url}/user/{name}/{SERVICE}/"

    def open_explorer(self, session: requests.Session, name: str, timeout: float = OPEN_SECONDS) -> float:
        """Start the student's server (as the hub's "Start my server" does) and visit their explorer until the app
        answers with its page -> seconds it took."""
        began = time.monotonic()
        session.get(f"{self.url}/hub/spawn/{name}", allow_redirects=False)
        while time.monotonic() - began < timeout:
            reply = session.get(self.explorer_url(name), timeout=timeout)
            if reply.status_code == 200 and "spawn-pending" not in reply.url and "gradio" in reply.text:
                return time.monotonic() - began
            time.sleep(0.5)
        raise TimeoutError(f"{name}'s explorer did not open within {timeout:.0f} s:\n{self.log_tail()}")

    def service_url(self, path: str = "") -> str:
        return f"{self.url}/services/{SERVICE}/{path}"

    def xsrf_of_page(self, session: requests.Session) -> str:
        """The teacher page's XSRF token (the page carries it; its requests send it back)."""
        page = session.get(self.service_url())
        found = re.search(r"XSRF = '([^']*)'", page.text)
        if page.status_code != 200 or not found:
            raise RuntimeError(f"the teacher page did not open: HTTP {page.status_code}")
        return found.group(1)

    def cookie_header(self, session: requests.Session) -> dict:
        return {"Cookie": "; ".join(f"{c.name}={c.value}" for c in session.cookies)}

    def token_of(self, session: requests.Session, name: str) -> str:
        """A new API token of the logged-in user (as a student can make one in the hub's token page)."""
        reply = session.post(f"{self.url}/hub/api/users/{name}/tokens", json={"note": "test"},
                             headers={"X-XSRFToken": session.cookies.get("_xsrf", path="/hub/")})
        reply.raise_for_status()
        return reply.json()["token"]
