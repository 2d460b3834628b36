"""The app as a benchmark's subprocess: launch on localhost, sample its memory, end it and everything it started.

Reads /proc directly (no psutil): a process's descendants are found from the parent pid in /proc/PID/stat,
and each process is identified by (pid, start time) so a recycled pid is never signalled."""
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = os.sysconf("SC_PAGE_SIZE")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (index 0 is the state), or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def process_key(pid: int) -> tuple[int, int] | None:
    """(pid, start time in clock ticks): the same pid with another start time is another process."""
    fields = _stat_fields(pid)
    return None if fields is None or fields[0] == "Z" else (pid, int(fields[19]))


def descendants(root: int) -> list[int]:
    """Every live process below root (children, grandchildren, ...), from one scan of /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo and len(found) < 10_000:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def rss_bytes(pid: int) -> int:
    fields = _stat_fields(pid)
    return 0 if fields is None else int(fields[21]) * PAGE


def rss_mb(pid: int) -> float:
    """Resident memory of a live process, in MB (ProcessLookupError once it has gone)."""
    if process_key(pid) is None:
        raise ProcessLookupError(f"no process {pid}")
    return rss_bytes(pid) / 2 ** 20


def pss_bytes(pid: int) -> int:
    """Proportional set size: each shared page split between the processes sharing it (0 if unreadable)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class MemorySampler:
    """Peak RSS of a process tree (the server plus all its descendants), sampled every interval seconds.

    The sum of RSS counts pages shared between the forkserver and its children once per process, so it is
    an upper bound on what the tree really holds; the sum of PSS (peak_pss) splits shared pages instead."""

    def __init__(self, root: int, interval: float = 0.5, max_samples: int = 100_000):
        self.root, self.interval, self.max_samples = root, interval, max_samples
        self.peak, self.peak_pss, self.peak_processes, self.samples = 0, 0, 0, 0
        self.peak_server = 0  # the server process alone
        self.series: list[tuple[float, int, int]] = []  # (time, server RSS, tree RSS) of every sample
        self.seen: dict[tuple[int, int], None] = {}  # every process of the tree we ever saw, in order
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)

    def sample(self) -> int:
        pids = [self.root, *descendants(self.root)]
        for pid in pids:
            key = process_key(pid)
            if key:
                self.seen.setdefault(key)
        server = rss_bytes(self.root)
        total = server + sum(rss_bytes(pid) for pid in pids[1:])
        self.peak_server = max(self.peak_server, server)
        self.series.append((time.monotonic(), server, total))
        if total > self.peak:
            self.peak, self.peak_processes = total, len(pids)
        self.peak_pss = max(self.peak_pss, sum(pss_bytes(pid) for pid in pids))
        self.samples += 1
        return total

    def _run(self):
        while not self._stop.is_set() and self.samples < self.max_samples:
            self.sample()
            self._stop.wait(self.interval)


def wait_for_app(port: int, proc: subprocess.Popen, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited with code {proc.returncode} before serving port {port}")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            connection.request("GET", "/")
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.5)
        finally:
            connection.close()
    raise TimeoutError(f"the app did not answer on port {port} within {timeout:.0f} s")


class LaunchedApp:
    """python app.py on a free 127.0.0.1 port; on exit it ends the app and then any descendant that outlived it.
    root: the checkout whose app.py runs (another worktree, to compare side by side); memory_cap_gb: the app's
    address space is capped there (RLIMIT_AS, its children inherit it), so a case that allocates without bound
    fails inside the app instead of making the machine swap or the kernel kill other processes."""

    def __init__(self, extra_args: list[str], root: Path = ROOT, memory_cap_gb: float | None = None):
        self.extra_args, self.root, self.memory_cap_gb = extra_args, Path(root), memory_cap_gb
        self.proc: subprocess.Popen | None = None
        self.known: dict[tuple[int, int], None] = {}
        self.outlived: list[tuple[int, int]] = []  # descendants still alive after the app itself had exited
        self.log = Path(tempfile.mkstemp(prefix="classroom-app-", suffix=".log")[1])

    def __enter__(self):
        self.port = free_port()
        env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1",
               "PYTHONUNBUFFERED": "1"}
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(self.port), *self.extra_args],
                cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=self._cap_memory)
        try:
            wait_for_app(self.port, self.proc)
        except BaseException:
            self.__exit__()
            raise RuntimeError(f"the app did not start; its log:\n{self.log.read_text()[-3000:]}") from None
        return self

    def _cap_memory(self) -> None:
        if self.memory_cap_gb:
            import resource

            cap = int(self.memory_cap_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def remember(self, keys) -> None:
        """Processes (from a sampler) to end too if they outlive the app."""
        for key in keys:
            self.known.setdefault(key)

    def __exit__(self, *exc):
        if self.proc is None:
            return
        self.remember(k for k in map(process_key, descendants(self.proc.pid)) if k)
        _end(self.proc)
        _wait_gone(list(self.known), 5.0)  # the app's own shutdown may take a moment to reach its children
        self.outlived = [k for k in self.known if process_key(k[0]) == k]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid, start in self.outlived:
                if process_key(pid) == (pid, start):
                    os.kill(pid, sig)
            _wait_gone(self.outlived, 5.0)


def _end(proc: subprocess.Popen) -> None:
    """SIGTERM, up to 15 s to exit, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _wait_gone(keys: list[tuple[int, int]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(process_key(pid) == (pid, start) for pid, start in keys):
        time.sleep(0.1)
