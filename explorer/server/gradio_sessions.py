"""Cheap new browser sessions: Gradio 6.31 builds the configuration of every block (its props, API schema,
an inspect.signature per block) for each new session, only so that gr.DeepLinkButton could snapshot it
later. With this app's ~300 blocks that is 0.3-0.5 s of the server's GIL per new session: thirty students
arriving in five seconds queued every request for seconds. Here the per-session copy is built on first
use instead (the app has no deep-link button, so it is never built).

install() swaps Gradio's SessionState for LazySessionState; tests/test_gradio_sessions.py checks that a
lazy session has the same attributes and yields the same configuration as Gradio's own.

keep_pages_state() changes which session's Gradio state goes over capacity (--max-sessions): scripts' first, so
that no number of fresh API sessions pushes out a browser page's gr.State values (its lesson, its link)."""
import os
from copy import copy
from typing import Callable

import gradio.state_holder as state_holder


class LazyBlockConfigs(dict):
    """{block id: its config}, each built the first time it is read; iterating builds all of them."""

    def __init__(self, blocks_config, ids):
        super().__init__()
        self._blocks_config, self._pending = blocks_config, list(ids)

    def __missing__(self, key):
        if key not in self._pending:
            raise KeyError(key)
        return self._build(key)

    def __contains__(self, key):
        return super().__contains__(key) or key in self._pending

    def _build(self, key):
        self._pending.remove(key)
        value = self._blocks_config.config_for_block(key, [], self._blocks_config.blocks[key])
        super().__setitem__(key, value)
        return value

    def __setitem__(self, key, value):
        if key in self._pending:
            self._pending.remove(key)
        super().__setitem__(key, value)

    def items(self):
        for key in list(self._pending):
            self._build(key)
        return super().items()

    def __len__(self):
        return super().__len__() + len(self._pending)


class LazySessionState(state_holder.SessionState):
    """Gradio's SessionState (6.31.0) with config_values built lazily; everything else as upstream."""

    def __init__(self, blocks):  # replaces super().__init__, which builds every config at once
        self.blocks_config = copy(blocks.default_config)
        self.config_values = LazyBlockConfigs(
            self.blocks_config, [k for k in self.blocks_config.blocks if k in blocks.blocks])
        self.state_data = {}
        self._state_ttl = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600


def install() -> None:
    state_holder.SessionState = LazySessionState


def keep_pages_state(holder, is_page: Callable[[str], bool]) -> None:
    """Replace holder.update (Gradio 6.31's StateHolder: move a session to the end, drop the least recently used
    over capacity) with one that drops the least recently used script's state first, a page's only when no
    script's is left, and never the session being looked up (Gradio then reads it back at once)."""
    def update(session_id: str) -> None:
        with holder.lock:
            if session_id in holder.session_data:
                holder.session_data.move_to_end(session_id)
            while len(holder.session_data) > holder.capacity:
                others = [key for key in holder.session_data if key != session_id]
                if not others:
                    return
                victim = next((key for key in others if not is_page(key)), others[0])
                holder.session_data.pop(victim)
                holder.time_last_used.pop(victim, None)

    holder.update = update
