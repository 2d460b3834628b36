"""How often Gradio's queue looks for work when it has none.

Gradio 6.31's queue loop (Queue.start_processing) sleeps 1 ms between looks when nothing is queued on Linux, and its
progress loop 10 ms: an idle app then keeps 6 % of a core busy (measured on 2 cores, AMD EPYC: 1.2 s of CPU in
20 s with no page open). A class server pays that once, but one server per student (JupyterHub) pays it per
student, and the test suite per launched app. Looking every IDLE_POLL_SECONDS instead delays a request's start
by at most that (a page load chains about five events: 0.1 s at worst), against analyses that take a
second; at 0.02 s an idle app keeps about 1.5 % of a core busy."""
import gradio.queueing as queueing

IDLE_POLL_SECONDS = 0.02  # the queue's look for new requests when idle (Gradio: 0.001)
PROGRESS_POLL_SECONDS = 0.05  # its look for progress to send (Gradio: 0.01); a progress bar moves 20 times a second


def relax(queue: queueing.Queue) -> None:
    """Set the queue's idle polling intervals (attributes Gradio reads on each pass of its loops)."""
    if not hasattr(queue, "sleep_when_free") or not hasattr(queue, "progress_update_sleep_when_free"):
        raise RuntimeError("Gradio's Queue no longer has sleep_when_free / progress_update_sleep_when_free: "
                           "see explorer/server/queue_polling.py")
    queue.sleep_when_free = IDLE_POLL_SECONDS
    queue.progress_update_sleep_when_free = PROGRESS_POLL_SECONDS
