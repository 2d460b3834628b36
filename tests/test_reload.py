"""A page reload returns the same session (the browser's key); closed pages are released after the TTL."""
import pytest

from explorer.common.limits import LIMITS
from explorer.state.session import SessionRegistry
from explorer.state.shipped import load_shipped


@pytest.fixture()
def registry():
    r = SessionRegistry()
    yield r
    r.close_all()


def test_a_reload_with_the_browser_key_finds_the_same_session(registry):
    key = registry.resume("page-1", None)
    first = registry.get("page-1")
    first.inspected.use(load_shipped("first-names"), "my model")
    registry.detach("page-1")  # the old page goes away (before or after the new one loads)
    assert registry.resume("page-2", key) == key
    again = registry.get("page-2")
    assert again is first and again.inspected.name == "my model" and again.detached_at is None


def test_the_old_page_closing_after_the_reload_keeps_the_session(registry):
    key = registry.resume("page-1", None)
    registry.get("page-1").inspected.use(load_shipped("first-names"), "mine")
    registry.resume("page-2", key)
    registry.detach("page-1")
    assert registry.get("page-2").detached_at is None
    assert registry.release_detached(now=1e12) == 0


def test_a_page_without_a_key_gets_a_new_one_and_keeps_what_it_made(registry):
    early = registry.get("page-1")  # a load event that ran before the key was read
    key = registry.resume("page-1", "")
    assert len(key) >= 24 and registry.get("page-1") is early and len(registry) == 1


def test_an_unknown_or_forged_key_gets_a_fresh_session(registry):
    key = registry.resume("page-1", None)
    registry.get("page-1").inspected.use(load_shipped("first-names"), "secret work")
    for forged in ("not-a-key", 12, {"k": 1}, key[:-1]):
        new = registry.resume(f"page-{forged!r}", forged)
        assert new != key and registry.get(f"page-{forged!r}").inspected.name != "secret work"


def test_a_blank_session_made_before_attaching_is_released(registry):
    key = registry.resume("page-1", None)
    registry.get("page-1")
    registry.get("page-2")  # page 2 rendered something before its key arrived
    registry.resume("page-2", key)
    assert len(registry) == 1 and registry.get("page-2") is registry.get("page-1")


def test_closed_pages_are_released_after_the_ttl_and_told_why(registry):
    key = registry.resume("page-1", None)
    registry.get("page-1").inspected.use(load_shipped("first-names"), "mine")
    registry.detach("page-1")
    closed_at = registry._sessions[key].detached_at
    assert registry.release_detached(now=closed_at + LIMITS.resume_ttl_seconds - 1) == 0
    assert registry.release_detached(now=closed_at + LIMITS.resume_ttl_seconds + 1) == 1
    new_key = registry.resume("page-2", key)
    session = registry.get("page-2")
    assert new_key != key and session.inspected.name != "mine"
    assert any("closed for more than" in n for n in session.notices)


def test_a_script_session_without_a_key_is_released_when_it_closes(registry):
    registry.get("script")
    registry.detach("script")
    assert len(registry) == 0


def test_evicted_session_user_is_told_on_reload(registry, monkeypatch):
    """A class larger than --max-sessions: a new page pushes out the least recently used page's work."""
    monkeypatch.setattr(LIMITS, "max_sessions", 2)
    key = registry.resume("page-1", None)
    registry.get("page-1").inspected.use(load_shipped("first-names"), "mine")
    registry.resume("b", None)
    registry.get("b").inspected.use(load_shipped("first-names"), "b's")
    registry.resume("c", None)
    registry.get("c")  # page 1's session is the least recently used: evicted
    registry.resume("page-2", key)
    assert any("least recently used" in n for n in registry.get("page-2").notices)
