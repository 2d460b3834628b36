"""Which session goes over --max-sessions (explorer.state.eviction): blank sessions first, no number of scripts or
fresh API sessions pushes out anyone's work or a running run, a new page may push out the least recently used
work (told to its user), blank sessions are capped per client address; Gradio's state of pages outlives scripts'."""
from types import SimpleNamespace

import pytest

from explorer.common.limits import LIMITS
from explorer.server.gradio_sessions import keep_pages_state
from explorer.state.eviction import BLANK_PER_ADDRESS, holds_work
from explorer.state.inspected import Evaluation
from explorer.state.session import SessionRegistry, new_session
from explorer.state.shipped import load_shipped


@pytest.fixture()
def registry(monkeypatch):
    monkeypatch.setattr(LIMITS, "max_sessions", 4)
    r = SessionRegistry()
    yield r
    r.close_all()


def page_with_work(registry, page: str):
    """A browser page (its key sent) whose student changed the model."""
    registry.resume(page, None)
    session = registry.get(page, "10.0.0.1")
    session.inspected.use(load_shipped("first-names"), "my model")
    return session


def test_what_counts_as_work():
    session = new_session()
    assert not holds_work(session)
    for change in (lambda s: setattr(s.member, "display_name", "Ana"),
                   lambda s: s.member.answers.update({("l", 0): "x"}),
                   lambda s: s.inspected.use(load_shipped("first-names"), "first-names"),
                   lambda s: setattr(s.workspace, "model_b", object())):
        other = new_session()
        change(other)
        assert holds_work(other)
    session.inspected.caches.evaluation = Evaluation("text", None, None)  # a cache is not work
    assert not holds_work(session)


@pytest.mark.slow
def test_any_number_of_fresh_api_sessions_never_push_out_a_page_with_work(registry):
    mine = page_with_work(registry, "page")
    for i in range(200):  # each asks once from its own script and never comes back
        registry.get(f"api-{i}", f"10.0.1.{i % 250}")
    assert registry.get("page") is mine and mine.inspected.name == "my model"
    assert len(registry) <= LIMITS.max_sessions


def test_scripts_never_push_out_a_scripts_work_or_a_paused_page_either(registry):
    script = registry.get("script", "10.0.0.2")
    script.member.display_name = "a script with a name"
    page = page_with_work(registry, "page")
    for i in range(50):
        registry.get(f"api-{i}", "10.0.0.3")
    assert registry.get("script") is script and registry.get("page") is page


def test_a_newcomer_that_cannot_be_kept_is_served_and_told(registry):
    kept = [page_with_work(registry, f"page-{i}") for i in range(LIMITS.max_sessions)]
    newcomer = registry.get("api", "10.0.0.9")
    assert newcomer not in registry.sessions() and all(s in registry.sessions() for s in kept)
    assert len(newcomer.notices) == 1 and "does not keep yours" in newcomer.notices[0]


def test_a_new_page_pushes_out_the_least_recently_used_work_and_its_user_is_told(registry):
    script = registry.get("script", "10.0.0.2")
    script.inspected.use(load_shipped("first-names"), "script's model")
    first = page_with_work(registry, "page-0")
    for i in range(1, LIMITS.max_sessions - 1):
        page_with_work(registry, f"page-{i}")
    registry.resume("new-page", None)
    registry.get("new-page", "10.0.0.5").member.display_name = "Ben"  # over capacity: a script's work goes first
    assert script not in registry.sessions() and first in registry.sessions()
    registry.resume("another-page", None)
    registry.get("another-page", "10.0.0.6")  # then the least recently used page's
    assert first not in registry.sessions()
    back = registry.get("script")
    assert any("least recently used" in n for n in back.notices)


def test_blank_sessions_of_one_address_are_capped_and_recycled_silently(monkeypatch):
    monkeypatch.setattr(LIMITS, "max_sessions", 64)
    registry = SessionRegistry()
    mine = registry.get("work", "10.0.0.7")
    mine.member.display_name = "Ana"
    for i in range(30):
        registry.get(f"blank-{i}", "10.0.0.7")
    others = registry.get("elsewhere", "10.0.0.8")
    held = registry.sessions()
    assert sum(s.address == "10.0.0.7" for s in held) == BLANK_PER_ADDRESS + 1  # the blank ones, and Ana's
    assert mine in held and others in held
    again = registry.get("blank-0", "10.0.0.7")  # recycled: a fresh blank session, and no notice
    assert again.notices == [] and not holds_work(again)
    registry.close_all()


def test_gradio_keeps_pages_state_over_scripts_state():
    class Holder:  # Gradio 6.31's StateHolder fields that update() uses
        def __init__(self):
            import threading
            from collections import OrderedDict
            self.lock, self.session_data, self.time_last_used, self.capacity = threading.Lock(), OrderedDict(), {}, 3

        def add(self, key):
            self.session_data[key] = SimpleNamespace()
            self.update(key)
    holder = Holder()
    pages = {"page-a", "page-b"}
    keep_pages_state(holder, pages.__contains__)
    holder.add("page-a")
    holder.add("page-b")
    for i in range(10):
        holder.add(f"api-{i}")
    assert set(holder.session_data) == {"page-a", "page-b", "api-9"}
    pages |= {"page-c", "page-d"}
    holder.add("page-c")  # the last script's state goes
    assert set(holder.session_data) == {"page-a", "page-b", "page-c"}
    holder.add("page-d")  # no script's state left: only now does a page's go, the least recently used
    assert set(holder.session_data) == {"page-b", "page-c", "page-d"}
