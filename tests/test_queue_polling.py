"""An idle app's queue looks for work every IDLE_POLL_SECONDS, not every millisecond (explorer/server/queue_polling):
Gradio's own loop is driven here on an empty queue and its wake-ups counted."""
import asyncio
import os
import threading

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402
import pytest  # noqa: E402

from explorer.server import queue_polling  # noqa: E402

RUN_SECONDS = 0.3


def wakeups(queue, monkeypatch) -> int:
    """How many times Gradio's queue loop sleeps in RUN_SECONDS with nothing queued."""
    real_sleep, count = asyncio.sleep, [0]

    async def counted(seconds, *args, **kwargs):
        count[0] += 1
        return await real_sleep(seconds, *args, **kwargs)

    async def run():
        task = asyncio.ensure_future(queue.start_processing())
        await real_sleep(RUN_SECONDS)
        queue.stopped = True
        await task

    monkeypatch.setattr(asyncio, "sleep", counted)
    queue.stopped = False
    # in a thread of its own: a browser test earlier in the same worker may leave this thread's event loop running
    worker = threading.Thread(target=asyncio.run, args=(run(),))
    worker.start()
    worker.join()
    monkeypatch.setattr(asyncio, "sleep", real_sleep)
    return count[0]


def an_idle_queue():
    with gr.Blocks() as demo:
        gr.Button().click(lambda: None)
    demo.queue()
    demo._queue.active_jobs = [None]  # as start() leaves it, without a server
    return demo._queue


@pytest.mark.parametrize("relaxed", [False, True])
def test_an_idle_queue_wakes_at_most_once_per_idle_poll(relaxed, monkeypatch):
    queue = an_idle_queue()
    if relaxed:
        queue_polling.relax(queue)
    n = wakeups(queue, monkeypatch)
    most = RUN_SECONDS / queue_polling.IDLE_POLL_SECONDS + 2
    if relaxed:
        assert 0 < n <= most, n
    else:  # Gradio's own interval: a wake-up every millisecond or so (the reason for relax)
        assert n > 3 * most, n


def test_relax_says_so_when_gradio_renames_its_intervals():
    class Renamed:
        pass

    with pytest.raises(RuntimeError, match="sleep_when_free"):
        queue_polling.relax(Renamed())
