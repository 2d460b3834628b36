"""Who is served next when requests queue: clients the server has known for a while before brand-new ones.

Gradio 6.31 serves each concurrency group's queue first come, first served (Queue.get_events takes queue[0]).
One student who opens many fresh API sessions at once (each a new session hash, each asking for a view) then puts
every classmate behind the whole flood: with SmolLM2 as the model, eight such requests at a time kept a
bystander's /attention waiting 6.6 s on 2 cores (bench.hostile_class, case d2). Here each queue is ordered, before
Gradio picks from it, by the rank of its requests' sessions: a session first seen at least ESTABLISHED_SECONDS ago
goes before a newer one, and requests of equal rank keep their order (a stable sort). A flood of new sessions
therefore only waits behind itself; a student's own first requests wait at most behind the classmates who were
already there, and their session is established seconds later.

install() wraps Queue.get_events; tests/test_queue_order.py drives the wrapped method on Gradio's own queue."""
import time
from collections import OrderedDict
from typing import Callable

import gradio.queueing as queueing

ESTABLISHED_SECONDS = 5.0  # a session seen this long ago is served before newer ones
REMEMBERED = 4096  # session hashes whose first sighting is kept (the oldest are forgotten first)


class FirstSeen:
    """When each session hash was first seen (bounded: the least recently seen are forgotten)."""

    def __init__(self, capacity: int = REMEMBERED, clock: Callable[[], float] = time.monotonic):
        self.capacity, self.clock, self._seen = capacity, clock, OrderedDict()

    def rank(self, session_hash: str) -> int:
        """0 for a session first seen ESTABLISHED_SECONDS ago or earlier, 1 for a newer one (seen now if new)."""
        now = self.clock()
        first = self._seen.pop(session_hash, now)
        self._seen[session_hash] = first  # most recently seen last
        while len(self._seen) > self.capacity:
            self._seen.popitem(last=False)
        return 0 if now - first >= ESTABLISHED_SECONDS else 1


def established_first(events: list, first_seen: FirstSeen) -> None:
    """Order events (Gradio's Event objects, in arrival order) in place: established sessions' first."""
    ranks = {event.session_hash: first_seen.rank(event.session_hash) for event in events}
    if len(set(ranks.values())) > 1:
        events.sort(key=lambda event: ranks[event.session_hash])


def install(first_seen: FirstSeen = None) -> None:
    """Wrap Gradio's Queue.get_events so every concurrency group's queue is ordered before it picks."""
    first_seen = first_seen or FirstSeen()
    upstream = getattr(queueing.Queue.get_events, "upstream", queueing.Queue.get_events)

    def get_events(self):
        for event_queue in self.event_queue_per_concurrency_id.values():
            if event_queue.queue:  # a single request is looked at too: its session's first sighting
                established_first(event_queue.queue, first_seen)
        return upstream(self)

    get_events.upstream = upstream
    queueing.Queue.get_events = get_events
