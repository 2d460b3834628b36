import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import subprocess
import sys
from pathlib import Path

import pytest

from bench.server_process import free_port, wait_for_app  # noqa: F401 - tests import them from here

ROOT = Path(__file__).resolve().parent.parent


APP_PIDS: dict[str, int] = {}  # app_url -> the app's process id (for RSS and process checks)
_SHARED_APP: dict = {}  # the app_url fixture's process and log, for shared_app_alive


def rss_mb(pid: int) -> float:
    """Resident memory of one process, in MB (from /proc: no psutil needed)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for process {pid}")


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """The real app (python app.py) on a free localhost port, for client and browser tests; its log on failure."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("app") / "app.log"
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1",
           "PYTHONUNBUFFERED": "1"}
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port), "--max-trainers", "2"],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    APP_PIDS[url] = proc.pid
    _SHARED_APP.update(proc=proc, log=log_path)
    try:
        wait_for_app(port, proc)
    except Exception:
        proc.kill()
        raise RuntimeError(f"{log_path.read_text()[-3000:]}") from None
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(autouse=True)
def shared_app_alive(request):
    """A test that used the shared app fails with the app's exit code and log if the app has gone, instead of
    every later test failing to connect with no word of why."""
    yield
    proc = _SHARED_APP.get("proc")
    if "app_url" in request.fixturenames and proc is not None and proc.poll() is not None:
        pytest.fail(f"the shared app exited with code {proc.returncode}; the end of its log:\n"
                    f"{_SHARED_APP['log'].read_text()[-4000:]}", pytrace=False)


@pytest.fixture
def one_thread():
    """Torch on one thread for the test: a tiny model gains nothing from more, and on a busy machine they only
    wait for each other."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
