"""The classroom server's lifecycle: SIGTERM ends every process, idle runs expire, Start is atomic, a failed
run keeps the previous model, one session's concurrent calls never see each other's hooks, eviction is told."""
import os
import signal
import threading
import time
from types import SimpleNamespace

import gradio as gr
import pytest
from gradio_client import Client

from explorer.callbacks import attention, sampling, train
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.state import training_run
from explorer.state.session import REGISTRY, SessionRegistry
from explorer.state.shipped import load_shipped
from explorer.tabs.binding import SHARED, bind
from tests.helpers import PROMPT, alive, app_process, descendants, wait_for
from tests.trainer_helpers import train_values, wait_for_state, wait_for_steps, wait_until_done

pytestmark = pytest.mark.timeout(240)


@pytest.mark.app  # launches an app of its own
def test_sigterm_to_the_app_ends_the_forkserver_and_every_training_child(tmp_path):
    """SIGTERM, as systemd and docker stop a server (SIGINT, a terminal's Ctrl-C, goes to the same handler: tested on
    an SAE training child in tests/test_sae_client.py, one app launch each)."""
    sig = signal.SIGTERM
    with app_process(tmp_path / "app.log") as (app, url):
        client = Client(url, verbose=False)
        client.predict("first-names", "char", 512, *train_values(max_steps=20_000),
                       api_name="/train_start")
        wait_for(lambda: len(descendants(app.pid)) >= 3, "a forkserver and a training child", 60)
        below = descendants(app.pid)
        app.send_signal(sig)
        wait_for(lambda: not any(alive(p) for p in [*below, app.pid]) or app.poll() is not None and
                 not any(alive(p) for p in below),
                 lambda: f"every process to end after {sig.name} (alive: {[p for p in below if alive(p)]})", 5.0)
        assert app.wait(timeout=5) == 0, (tmp_path / "app.log").read_text()[-2000:]
        assert "training processes ended" in (tmp_path / "app.log").read_text()


def test_a_paused_run_expires_after_the_idle_ttl_and_frees_its_slot(training_sessions, monkeypatch):
    monkeypatch.setattr(LIMITS, "max_trainers", 1)
    monkeypatch.setattr(LIMITS, "run_ttl_seconds", 60.0)
    a, b = training_sessions(), training_sessions()
    train.start_training(a, "first-names", "char", 512, *train_values(max_steps=20_000))
    wait_for_steps(a, 2)
    train.control(a, "pause")
    wait_for_state(a, "paused")
    with pytest.raises(UserError, match="frees in about"):  # the paused run's remaining TTL is known
        train.start_training(b, "first-names", "char", 512, *train_values())
    training_run.expire_idle_runs()
    assert a.workspace.run.progress.requested == "paused"  # paused for less than the TTL
    training_run.expire_idle_runs(now=time.monotonic() + 61.0)  # paused for longer than the TTL
    assert "stopped this run because it was paused" in wait_until_done(a)["status"]
    assert a.inspected.name.startswith("trained on first-names") and a.workspace.run.progress.state == "stopped"
    train.start_training(b, "first-names", "char", 512, *train_values())  # the slot was given back
    wait_until_done(b)


def test_start_is_atomic_per_session_double_click(training_sessions):
    session = training_sessions()
    REGISTRY._sessions["double-click"] = session
    start = bind(train.start_training)
    request = SimpleNamespace(session_hash="double-click")
    results, barrier = [], threading.Barrier(2)

    def click():
        barrier.wait()
        try:
            results.append(start(request, "first-names", "char", 512, *train_values(max_steps=20_000)))
        except Exception as err:  # noqa: BLE001 - the second click's gr.Error
            results.append(err)

    threads = [threading.Thread(target=click) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        started = [r for r in results if isinstance(r, str)]
        refused = [r for r in results if not isinstance(r, str)]
        assert len(started) == 1 and len(refused) == 1 and "already going" in str(refused[0])
        assert training_run.running_count() == 1
        train.control(session, "stop")  # the one run is reachable
        wait_until_done(session)
        assert training_run.running_count() == 0
    finally:
        REGISTRY._sessions.pop("double-click", None)


def test_a_crashed_run_keeps_the_previous_model_and_says_why(training_sessions):
    session = training_sessions()
    name, before = session.inspected.name, session.inspected.version
    train.start_training(session, "first-names", "char", 512, *train_values(max_steps=20_000))
    wait_for_steps(session, 3)
    os.kill(session.workspace.run.remote.process.pid, signal.SIGKILL)
    status = wait_until_done(session)["status"]
    assert "error at step" in status and "ended unexpectedly" in status
    assert f"still inspect **{name}**" in status
    assert session.inspected.name == name and session.inspected.version == before


def test_concurrent_calls_of_one_session_equal_their_sequential_results(training_sessions):
    session = training_sessions()
    REGISTRY._sessions["concurrent"] = session
    request = SimpleNamespace(session_hash="concurrent")
    table = [[0.8, 0, 1.0, 0.0], [1.2, 5, 0.9, 0.0]]
    calls = {
        "attention": (bind(attention.attention_view), (PROMPT, 1, 1, -1, False)),
        "attention2": (bind(attention.attention_view), ("Before we", 0, 0, 3, False)),
        "compare": (bind(sampling.comparison_view), (PROMPT, table, 20, 3, False)),
        "generate": (bind(sampling.steps_view), (PROMPT, 0.9, 0, 1.0, 0.0, 20, 4, False)),
    }

    def value(name):
        fn, args = calls[name]
        out = fn(request, *args)
        if name.startswith("attention"):  # the head heatmap's values and the head statistics rows
            return out[1].data[0].z.tolist(), out[4]
        return out if name == "compare" else (out[0], out[1])

    try:
        sequential = {name: value(name) for name in calls}
        results, errors = {}, []

        def worker(name, i):
            try:
                results[(name, i)] = value(name)
            except Exception as err:  # noqa: BLE001
                errors.append(err)

        threads = [threading.Thread(target=worker, args=(n, i)) for i in range(3) for n in calls]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        for (name, _), result in results.items():
            assert result == sequential[name], name
        assert all(not hp._forward_hooks for hp in session.inspected.model.modules() if hasattr(hp, "_forward_hooks")
                   and type(hp).__name__ == "HookPoint")
    finally:
        REGISTRY._sessions.pop("concurrent", None)


def test_eviction_of_a_session_with_a_paused_run_is_told_when_its_user_returns(training_sessions, monkeypatch):
    monkeypatch.setattr(LIMITS, "max_sessions", 2)
    registry = SessionRegistry()
    first = registry.get("first")
    train.start_training(first, "first-names", "char", 512, *train_values(max_steps=20_000))
    wait_for_steps(first, 1)
    train.control(first, "pause")
    wait_for_state(first, "paused")
    registry.get("second").member.display_name = "Bo"  # work of its own: not the one to go
    registry.resume("third", None)  # a browser page arrives
    registry.get("third")  # over capacity: "first" is the least recently used session with work
    assert len(registry) == 2
    wait_for(lambda: not first.workspace.run.active, "the evicted session's run to stop")
    back = registry.get("first")
    assert back is not first and len(back.notices) == 1
    assert "paused run (step" in back.notices[0] and "was stopped" in back.notices[0]
    registry.close_all()


@pytest.mark.slow
def test_shipped_model_results_are_shared_but_a_trained_model_never_sees_them():
    registry_keys = ["shared-a", "shared-b"]
    try:
        view = bind(attention.attention_view, shared=True)
        a = view(SimpleNamespace(session_hash="shared-a"), "emma", 0, 0, -1, False)
        hits = SHARED.hits
        b = view(SimpleNamespace(session_hash="shared-b"), "emma", 0, 0, -1, False)
        assert SHARED.hits == hits + 1 and b is a  # the second student gets the first one's result
        other = REGISTRY.get("shared-b")
        other.inspected.use(load_shipped("first-names"), "first-names")  # not marked shared: its own results
        c = view(SimpleNamespace(session_hash="shared-b"), "emma", 0, 0, -1, False)
        assert SHARED.hits == hits + 1
        assert a[1].type == "plotly" and a[1].plot != c[1].to_json()  # shared figures are stored serialised
    finally:
        for key in registry_keys:
            REGISTRY.close(key)


@pytest.mark.slow
def test_shared_figures_are_stored_as_gradio_would_send_them():
    from explorer.tabs.binding import serialised_figures

    fig = attention.attention_view(REGISTRY.get("serialise"), "emma", 0, 0, -1, False)[0]
    try:
        shared = serialised_figures((fig, "caption"))
        assert shared[0] == gr.Plot().postprocess(fig) and shared[1] == "caption"
    finally:
        REGISTRY.close("serialise")


def test_shared_results_compute_once_when_a_class_asks_at_the_same_moment():
    from explorer.tabs.binding import SharedResults

    shared, calls, barrier = SharedResults(capacity=4), [], threading.Barrier(10)
    gate = threading.Event()

    def compute():
        calls.append(1)
        gate.wait(10)  # every other caller arrives while the first still computes
        return object()

    results = []

    def ask():
        barrier.wait()
        results.append(shared.get_or_compute("key", compute))

    threads = [threading.Thread(target=ask) for _ in range(10)]
    for t in threads:
        t.start()
    wait_for(lambda: shared.misses == 1 and len(calls) == 1, "one computation of the shared result", 5)
    gate.set()
    for t in threads:
        t.join(10)
    assert len(calls) == 1 and len(results) == 10 and len({id(r) for r in results}) == 1


def test_a_failed_shared_computation_is_not_stored_and_the_next_caller_computes():
    from explorer.tabs.binding import SharedResults

    shared = SharedResults()

    def fail():
        raise ValueError("bad prompt")

    with pytest.raises(ValueError):
        shared.get_or_compute("k", fail)
    assert shared.get_or_compute("k", lambda: 42) == 42 and shared.misses == 2


def test_a_failed_warm_up_is_told_and_the_server_serves_on(monkeypatch, capsys):
    """The warm-up runs inside launch's try/finally, whose shutdown() leaves with os._exit: a warm-up error used to
    end a serving app with exit code 0 and no word of why."""
    from explorer.server import launch

    def broken(torch_threads, default_model):
        raise ImportError("cannot import name 'x' from partially initialized module 'y'")

    monkeypatch.setattr(launch, "warm_up", broken)
    launch.warm_up_or_say_why(1, "shakespeare")  # returns: the server goes on
    out = capsys.readouterr()
    assert "Warm-up failed" in out.out and "partially initialized module" in out.err


@pytest.mark.slow
def test_requests_wait_for_the_warm_up_and_then_run():
    """Two threads importing the same modules at once can fail (_DeadlockError in a test run): a request that
    arrives while the launched app warms up waits for it, and runs once it is over."""
    from explorer.common import app_state

    done = threading.Event()
    handler = bind(lambda session: done.set() or "ran")
    app_state.warmed_up.clear()
    try:
        caller = threading.Thread(target=handler, args=(None,), daemon=True)
        caller.start()
        caller.join(0.3)
        assert caller.is_alive() and not done.is_set()  # waiting for the warm-up
    finally:
        app_state.warmed_up.set()
    caller.join(10)
    assert done.is_set() and not caller.is_alive()
