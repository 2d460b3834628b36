"""Requests of sessions the server has known for a while are served before a flood of brand-new sessions'
(explorer.server.queue_order), on Gradio's own queue, and in arrival order among equals."""
import gradio as gr
import gradio.queueing as queueing
import pytest

from explorer.server import queue_order
from explorer.server.queue_order import ESTABLISHED_SECONDS, FirstSeen, established_first


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Request:
    def __init__(self, session_hash: str):
        self.session_hash = session_hash


def test_a_session_is_established_once_seen_long_enough_ago():
    clock = Clock()
    seen = FirstSeen(clock=clock)
    assert seen.rank("a") == 1
    clock.now += ESTABLISHED_SECONDS - 0.1
    assert seen.rank("a") == 1 and seen.rank("b") == 1
    clock.now += 0.1
    assert seen.rank("a") == 0 and seen.rank("b") == 1


def test_the_oldest_sightings_are_forgotten_beyond_capacity():
    clock = Clock()
    seen = FirstSeen(capacity=3, clock=clock)
    for name in "abcd":
        seen.rank(name)
    clock.now += ESTABLISHED_SECONDS
    assert [seen.rank(name) for name in "bcd"] == [0, 0, 0]
    assert seen.rank("a") == 1  # forgotten: a newcomer again


def test_established_first_keeps_arrival_order_among_equals():
    clock = Clock()
    seen = FirstSeen(clock=clock)
    seen.rank("old-1"), seen.rank("old-2")
    clock.now += ESTABLISHED_SECONDS
    events = [Request(h) for h in ("new-1", "old-1", "new-2", "new-3", "old-2", "new-1")]
    established_first(events, seen)
    assert [e.session_hash for e in events] == ["old-1", "old-2", "new-1", "new-2", "new-3", "new-1"]


@pytest.fixture
def wrapped_queue(monkeypatch):
    """A Blocks app's real Gradio queue, with queue_order installed (undone after the test)."""
    monkeypatch.setattr(queueing.Queue, "get_events", queueing.Queue.get_events)
    clock = Clock()
    queue_order.install(FirstSeen(clock=clock))
    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.submit(lambda text: text, box, box, concurrency_limit=2, concurrency_id="analysis")
    demo.queue()
    queue, fn = demo._queue, demo.fns[0]
    queue.create_event_queue_for_fn(fn)
    return queue, fn, clock


def test_gradio_serves_an_established_session_before_an_earlier_flood(wrapped_queue):
    queue, fn, clock = wrapped_queue
    pending = queue.event_queue_per_concurrency_id[fn.concurrency_id].queue
    pending.append(queueing.Event("bystander", fn, None, None))
    assert queue.get_events()[0][0].session_hash == "bystander"  # first sighting, served at once
    clock.now += ESTABLISHED_SECONDS
    pending.extend(queueing.Event(f"flood-{i}", fn, None, None) for i in range(8))
    pending.append(queueing.Event("bystander", fn, None, None))
    served = [queue.get_events()[0][0].session_hash for _ in range(9)]
    assert served == ["bystander", *(f"flood-{i}" for i in range(8))]


def test_installing_twice_wraps_gradio_once(wrapped_queue):
    queue_order.install(FirstSeen())
    assert queueing.Queue.get_events.upstream.__module__ == "gradio.queueing"
