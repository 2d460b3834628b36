import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# Two pytest workers, their apps, training children and Chromium share two cores: a torch thread that spins while
# it waits for its partner (OpenMP's default) takes the core another process needs. Set before torch loads, so
# the apps and children the tests launch inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Every process that opens SmolLM2 (both workers, their apps) would measure its generation paths: 27 CPU-seconds
# each. They generate in float32 instead; the measuring is tested on its own (tests/test_generation_paths.py).
os.environ.setdefault("TX_GENERATION_PATH", "float32")

import subprocess
import sys

import pytest
import torch

from explorer.state.session import Session
from tests.browser_helpers import ARGS, CHROMIUM, PANEL_STATE, TIMEOUT_MS, polling_on_a_clock, still_pages
from tests.helpers import APP_PIDS, ROOT, free_port, tiny_session, wait_for_app
from tests.tiers import ordered_for_workers, tier_marks, worker_group

torch.set_num_threads(1)  # the tests' models are tiny; a test that wants more threads sets them and sets them back

_SHARED_APP: dict = {}  # the app_url fixture's process and log, for shared_app_alive


# ---------------------------------------------------------------- tiers (tests/tiers.py): `make test-fast` deselects them

def pytest_collection_modifyitems(config, items):
    """Runs before pytest's own -m selection (a conftest's hook is called first), so these marks select. Also
    orders the tests for pytest-xdist's `--dist loadgroup` (`make test`, pytest_xdist_make_scheduler below): see
    ordered_for_workers."""
    for item in items:
        for mark in tier_marks(item):
            item.add_marker(mark)
    items[:] = ordered_for_workers(items)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with a module's tests as one group (tiers.worker_group), so that they run in one worker
    and a module-scoped fixture is built once. xdist 3.8's own loadgroup writes an xdist_group mark's name into
    `item._nodeid`, which pytest 9 no longer reads (a node's id is its `_id`): every test went out alone, a
    module's tests were split between the workers, and each worker built the module's fixtures (the JupyterHub,
    module_page, SmolLM2 opened in its app). The groups go out in ordered_for_workers' order (xdist's would be
    most tests first: the one-test groups, the lesson walk among them, last)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    config.option.loadscopereorder = False
    return ModuleGroups(config, log)


# ---------------------------------------------------------------- the launched app

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


@pytest.fixture
def app_log_tail(app_url):
    """-> a function giving the last n characters of the shared app's log, for a failure's message."""
    return lambda n=3000: _SHARED_APP["log"].read_text()[-n:]


@pytest.fixture(autouse=True)
def shared_app_alive(request):
    """A test that used the shared app fails with the app's exit code and log if the app has gone, instead of
    every later test failing to connect with no word of why."""
    yield
    proc = _SHARED_APP.get("proc")
    if "app_url" in request.fixturenames and proc is not None and proc.poll() is not None:
        pytest.fail(f"the shared app exited with code {proc.returncode}; the end of its log:\n"
                    f"{_SHARED_APP['log'].read_text()[-4000:]}", pytrace=False)


# ---------------------------------------------------------------- sessions

@pytest.fixture
def training_sessions():
    """Sessions whose runs are stopped and joined after the test, so no thread outlives it."""
    made = []

    def make(seed: int = 0) -> Session:
        made.append(tiny_session(seed))
        return made[-1]

    yield make
    for s in made:
        s.workspace.stop_training()
        if s.workspace.run is not None:
            s.workspace.run.thread.join(timeout=30)
            assert not s.workspace.run.active, "a training thread did not stop"


@pytest.fixture
def one_thread():
    """Torch on one thread for the test: a tiny model gains nothing from more, and on a busy machine they only
    wait for each other."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---------------------------------------------------------------- headless Chromium

@pytest.fixture(scope="session")
def browser():
    """One Chromium per worker; every context it opens shows pages without CSS animations (still_pages)."""
    if not CHROMIUM.exists():
        pytest.skip(f"browser tests need Debian's Chromium at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        still_pages(browser)
        polling_on_a_clock()
        yield browser
        browser.close()


@pytest.fixture(autouse=True)
def close_the_tests_pages(request):
    """Every browser context a test opens is closed when the test ends, passed or failed: a page left open keeps
    polling its app and repainting for the rest of the worker's session, a share of a core each on two cores
    shared by everything. A module's shared page (module_page) is opened before this runs, and stays."""
    if "browser" not in request.fixturenames:
        yield
        return
    browser = request.getfixturevalue("browser")
    before = {id(c._impl_obj) for c in browser.contexts}
    yield
    for context in browser.contexts:
        if id(context._impl_obj) not in before:
            context.close()


@pytest.fixture
def page(browser, app_url):
    """A fresh browser context (so a fresh server-side session) on the app, after the first analysis drew."""
    yield from opened_app(browser, app_url)


@pytest.fixture(scope="module")
def module_page(browser, app_url):
    """One such page for a module's tests that leave it as they found it (each opens its own tab, say): a page
    load costs seconds of two shared cores."""
    yield from opened_app(browser, app_url)


@pytest.fixture
def blank_page(browser, app_url):
    """A fresh browser context's page that has opened nothing yet: for a test that opens its own link."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


def opened_app(browser, app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app_url)
    page.wait_for_function(f"() => ({PANEL_STATE})().plots >= 4")  # the Attention tab analyses on load
    yield page
    context.close()
