"""The heavy slot (explorer.state.heavy_slot): one job at a time; a long job gives way between batches to a job
that waits; a session's newer request stops its older one; a gone client stops its job; a client address has a
bounded number of jobs. Driven with real threads and a fake clock; no timing is asserted."""
import threading

import pytest

from explorer.common.errors import UserError
from explorer.state.heavy_slot import GONE, NEWER, TOO_LONG, HeavySlot, Job
from model_core.analysis.interruptible import between_batches
from tests.helpers import wait_for


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def start(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_a_long_job_gives_way_between_batches_and_both_finish():
    clock = Clock()
    slot = HeavySlot(slice_seconds=1.0, clock=clock)
    order, release_long = [], threading.Event()
    long_job, short_job = Job(object(), "10.0.0.1"), Job(object(), "10.0.0.2")

    def long():
        with slot.turn(long_job):
            order.append("long starts")
            release_long.wait(10)
            for _ in range(5):  # five batches, each a "second" long
                clock.now += 1.0
                between_batches()
            order.append("long ends")

    def short():
        with slot.turn(short_job):
            order.append("short runs")

    first = start(long)
    wait_for(lambda: order == ["long starts"], "the long job starting")
    second = start(short)
    wait_for(lambda: slot.waiting() == 1, "the bystander waiting")
    release_long.set()
    first.join(10), second.join(10)
    assert order == ["long starts", "short runs", "long ends"]  # the bystander ran between the long job's batches
    assert slot.gave_way == 1


def test_a_shorter_job_runs_to_its_end_before_the_long_job_resumes():
    """Least attained service: the bystander's three batches all run before the long job (which has had more
    time) gets its turn back, instead of alternating with it."""
    clock = Clock()
    slot = HeavySlot(slice_seconds=1.0, clock=clock)
    order, long_ran_two = [], threading.Event()

    def batches(job, name, n):
        with slot.turn(job):
            for i in range(n):
                clock.now += 1.0
                order.append(f"{name} {i}")
                if name == "long" and i == 1:
                    long_ran_two.set()
                    wait_for(lambda: slot.waiting() == 1, "the bystander waiting")
                between_batches()

    long = start(lambda: batches(Job(object(), "10.0.0.1"), "long", 5))
    long_ran_two.wait(10)
    short = start(lambda: batches(Job(object(), "10.0.0.2"), "short", 3))
    long.join(10), short.join(10)
    assert order == ["long 0", "long 1", "short 0", "short 1", "short 2", "long 2", "long 3", "long 4"]


def test_a_sessions_newer_request_stops_its_older_one():
    slot, session = HeavySlot(), object()
    results, running = {}, threading.Event()
    proceed = threading.Event()

    def older():
        try:
            with slot.turn(Job(session, "10.0.0.1")):
                running.set()
                proceed.wait(10)
                between_batches()
                results["older"] = "finished"
        except UserError as err:
            results["older"] = str(err)

    thread = start(older)
    running.wait(10)
    newer_thread = start(lambda: results.setdefault("newer", _run(slot, Job(session, "10.0.0.1"))))
    wait_for(lambda: slot.waiting() == 1, "the newer request waiting")
    proceed.set()
    thread.join(10), newer_thread.join(10)
    assert results == {"older": NEWER, "newer": "ran"}


def _run(slot, job) -> str:
    with slot.turn(job):
        between_batches()
    return "ran"


def test_a_job_stops_when_its_client_has_gone_or_it_ran_too_long():
    gone = {"yes": False}
    clock = Clock()
    slot = HeavySlot(clock=clock, max_run_seconds=10.0)
    with pytest.raises(UserError, match=GONE.split(":")[0]):
        with slot.turn(Job(object(), "a", client_gone=lambda: gone["yes"])):
            between_batches()
            gone["yes"] = True
            between_batches()
    with pytest.raises(UserError) as stopped:
        with slot.turn(Job(object(), "a")):
            clock.now += 11.0
            between_batches()
    assert str(stopped.value) == TOO_LONG
    assert slot.waiting() == 0 and _run(slot, Job(object(), "a")) == "ran"  # the slot is free again


def test_an_address_has_a_bounded_number_of_jobs_and_is_told_so():
    slot, hold = HeavySlot(per_address=2), threading.Event()
    running = threading.Event()

    def occupy(job):
        with slot.turn(job):
            running.set()
            hold.wait(10)
    threads = [start(lambda j=Job(object(), "10.0.0.9"): occupy(j)) for _ in range(2)]
    running.wait(10)
    wait_for(lambda: slot.waiting() == 1, "the second job waiting")
    with pytest.raises(UserError, match="at most 2 at once"):
        _run(slot, Job(object(), "10.0.0.9"))
    hold.set()
    for thread in threads:
        thread.join(10)
    assert _run(slot, Job(object(), "10.0.0.9")) == "ran"


def test_without_a_slot_between_batches_does_nothing():
    """An analysis run outside a job's turn (a test, a benchmark, another thread) is never interrupted: only the
    turn's own thread, and only during the turn, calls the slot."""
    clock, outside = Clock(), {}
    slot, job = HeavySlot(clock=clock, max_run_seconds=10.0), Job(object(), "a")

    def elsewhere():
        try:
            between_batches()
            outside["result"] = "ran on"
        except UserError as stopped:
            outside["result"] = str(stopped)
    with slot.turn(job):
        clock.now += 11.0  # over max_run_seconds: the job's own next batch stops it
        thread = start(elsewhere)
        thread.join(10)
        with pytest.raises(UserError, match="Stopped after"):
            between_batches()
    assert outside == {"result": "ran on"}  # another thread's analysis went on
    assert job.stopped == TOO_LONG
    between_batches()  # nor does the stopped job's check outlive its turn (it would raise TOO_LONG again)


def test_client_gone_reads_gradios_flags_of_the_sessions_running_events():
    """Gradio 6.31 marks a session's events not alive when its page disconnects (Queue.clean_events); the heavy
    slot stops a job on that. Pinned here so that a Gradio upgrade renaming them fails a test, not a class."""
    from types import SimpleNamespace

    from explorer.tabs.binding import client_gone

    mine, other = SimpleNamespace(session_hash="abc", alive=True), SimpleNamespace(session_hash="xyz", alive=False)
    queue = SimpleNamespace(active_jobs=[None, [mine, other]])
    app = SimpleNamespace(get_blocks=lambda: SimpleNamespace(_queue=queue))
    gone = client_gone(SimpleNamespace(session_hash="abc", request=SimpleNamespace(app=app)))
    assert not gone()
    mine.alive = False
    assert gone()
    assert not client_gone(SimpleNamespace(session_hash="abc", request=None))()  # a direct call: never gone
