"""Memory comes back: a session the server lets go of frees its model at once, and Gradio's state of a closed page
goes once the page has been gone for the resume TTL. The RSS itself is measured by python -m bench.memory (a burst
of 300 sessions through a launched app); these tests check the mechanisms, without timing or RSS bounds."""
import datetime
import gc
import platform
import weakref
from types import SimpleNamespace

import gradio as gr
import pytest
from gradio.state_holder import StateHolder

from explorer.common.limits import LIMITS
from explorer.server import memory
from explorer.server.memory import forget_closed, trim
from explorer.state.session import SessionRegistry
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.data.tokenization import build_tokenizer
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT

TEXT = "the cat sat on the mat. " * 20


def own_model(session) -> weakref.ref:
    """Give the session a model of its own and an analysis of it (its activation cache); -> a weak reference."""
    tokenizer = build_tokenizer("char", TEXT)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=16, d_model=16, n_heads=2, n_layers=1))
    session.inspected.use(Checkpoint(model, tokenizer), "tiny")
    ids = tokenizer.encode("the cat")
    session.inspected.analysis("the cat", ids, [str(i) for i in ids])
    return weakref.ref(model)


@pytest.fixture
def no_gc():
    """Whatever is freed must be freed by reference counting (at once), not by a later cycle collection. First
    runs the code once: a module's first import may leave its importers' frames in a cycle until gc runs."""
    own_model(SessionRegistry().get("warm-up"))
    gc.collect()
    gc.disable()
    yield
    gc.enable()


@pytest.mark.slow
def test_an_evicted_session_frees_its_model_at_once(monkeypatch, no_gc):
    monkeypatch.setattr(LIMITS, "max_sessions", 1)
    registry = SessionRegistry()
    model = own_model(registry.get("page-1"))
    registry.resume("page-2", None)  # a browser page arrives
    registry.get("page-2")  # over capacity: page-1's session (a script's) goes
    assert model() is None
    assert registry.released == 1


@pytest.mark.slow
def test_a_closed_script_session_and_a_released_page_free_their_models(no_gc):
    registry = SessionRegistry()
    script = own_model(registry.get("script"))
    registry.detach("script")  # a client without a browser key: released when it closes
    assert script() is None
    key = registry.resume("page", None)  # a browser page: waits the resume TTL for its return
    page = own_model(registry.get("page"))
    registry.detach("page")
    assert page() is not None  # kept for its page's return
    assert registry.release_detached(now=float("inf")) == 1
    assert page() is None
    assert registry.released == 2 and key


@pytest.fixture
def holder():
    """A Gradio StateHolder of a page with a gr.State whose delete_callback records what it is given."""
    deleted = []
    with gr.Blocks() as demo:
        state = gr.State(None, delete_callback=deleted.append)
        gr.Textbox("hello")
    holder = StateHolder()
    holder.set_blocks(demo)
    holder.deleted, holder.state_id = deleted, state._id
    return holder


def test_gradio_state_of_closed_pages_goes_after_the_ttl_and_open_pages_keep_theirs(holder):
    for page in ("open", "closed long ago", "closed just now", "closed but still used"):
        holder[page][holder.state_id] = f"{page}'s value"
    for page in ("closed long ago", "closed just now", "closed but still used"):
        holder.session_data[page].is_closed = True
    now = datetime.datetime.now()
    hour_ago = now - datetime.timedelta(hours=1)
    holder.time_last_used.update({"open": hour_ago, "closed long ago": hour_ago})
    holder["closed but still used"]  # a page that reconnected after a network blip keeps using its state

    assert forget_closed(holder, ttl_seconds=600, now=now) == 1
    assert list(holder.session_data) == ["open", "closed just now", "closed but still used"]
    assert "closed long ago" not in holder.time_last_used
    assert holder.deleted == ["closed long ago's value"]  # delete_callback fired, as on Gradio's own expiry
    assert forget_closed(holder, ttl_seconds=600, now=now) == 0


def test_trim_runs_where_there_is_no_glibc_too(monkeypatch):
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert hasattr(memory._libc(), "malloc_trim")  # the real one, which trim() calls here
    calls = []
    monkeypatch.setattr(memory, "_libc", lambda: SimpleNamespace(malloc_trim=calls.append))
    trim()
    assert calls == [0]  # glibc: every arena's free pages, none kept at the top of the heap
    for libc in (None, SimpleNamespace()):  # no libc.so.6 (macOS), or one without malloc_trim (musl)
        monkeypatch.setattr(memory, "_libc", lambda libc=libc: libc)
        trim()
    assert calls == [0]
