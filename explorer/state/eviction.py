"""Which session goes when the server holds more than --max-sessions, and how many blank sessions one client
address may keep.

A session *holds work* when its user would lose something if it went: a model they trained, uploaded, built or
chose, prepared data, a training run, model B, an answer, a name. A *blank* session holds none: one request (a
script's call, a page's first view) made it, and dropping it costs nobody anything, so it goes silently. A
*browser* session is a page's, found again through the key its browser keeps (explorer.callbacks.reload); the
others are scripts' (gradio_client, raw API calls).

Over capacity (a session was just made: the newcomer, blank), the one that goes is, in this order:
1. the least recently used other blank session;
2. only when the newcomer is a browser page: the least recently used script session that holds work, then the
   least recently used browser session that holds work (a class larger than --max-sessions; its user is told when
   they come back); never a running run;
3. else the newcomer itself: it serves the request that made it and is not kept (its caller is told why).
So no number of scripts, or of fresh API sessions, can push out anyone's work or a running run.
Blank sessions per address: at most BLANK_PER_ADDRESS; a newer one recycles that address's least recently used."""
from typing import Optional

BLANK_PER_ADDRESS = 8


def holds_work(session) -> bool:
    w, m = session.workspace, session.member
    return bool(session.inspected.version or w.run is not None or w.sae_run is not None
                or w.transcoder_run is not None or w.data is not None or w.model_b is not None or m.answers or m.display_name or m.teacher)


def training(session) -> bool:
    return any(run is not None and run.active and run.progress.requested != "paused"
               for run in (session.workspace.run, session.workspace.sae_run, session.workspace.transcoder_run))


def eviction_victim(sessions: dict, newcomer: str) -> str:
    """The key of the session to drop from sessions (least recently used first), by the rules above."""
    def first(test) -> Optional[str]:
        return next((key for key, s in sessions.items() if key != newcomer and not training(s) and test(s)), None)
    victim = first(lambda s: not holds_work(s))
    if victim is None and sessions[newcomer].browser:
        victim = first(lambda s: not s.browser) or first(lambda s: True)
    return newcomer if victim is None else victim


def surplus_blank(sessions: dict, address: str, keep: str) -> list[str]:
    """Keys of the blank sessions of address beyond BLANK_PER_ADDRESS, least recently used first (never keep)."""
    if not address:
        return []
    blank = [key for key, s in sessions.items()
             if key != keep and s.address == address and not holds_work(s) and not training(s)]
    return blank[:max(0, len(blank) - (BLANK_PER_ADDRESS - 1))]
