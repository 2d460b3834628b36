"""Memory that comes back: Gradio's state of closed pages, and the C allocator's free pages.

Two things kept a burst of sessions' memory after the sessions were gone (python -m bench.memory):
- Gradio 6.31 keeps every browser session's SessionState, with the last value of every input and output
  (the figures' JSON: megabytes per session), until --max-sessions newer ones push it out; a closed page's is only
  marked closed. forget_closed() drops those of pages closed and unused for --resume-ttl.
- glibc keeps freed memory in its arenas, one per thread that allocated (the server's ~40 request threads, up to
  8 arenas per core), and serves blocks of up to 32 MB from them once a freed large block has raised its mmap
  threshold, so analyses' activations and figures stay in the process after their session has gone.
  tune_allocator() caps the arenas at 2 and trim() hands free pages back to the kernel after sessions go.

Measured (python -m bench.memory, 300 sessions, 8 at once; server RSS start / peak / after): as it was 656 / 1564
/ 1545 MB; forgetting closed pages and trimming 590 / 1173 / 706; with 2 arenas 572 / 1035 / 591 (+19 MB).
A fixed 256 kB mmap threshold also gave 562 / 845 / 567 but cost a third of the analyses' throughput (page
faults), so large blocks stay with glibc's default."""
import ctypes
import datetime
import threading
import time
from typing import Callable, Optional

M_ARENA_MAX = -8  # malloc.h mallopt() parameter
ARENA_MAX = 2  # arenas shared by the server's request threads (no slower than one each: 2 analyses at once)
SWEEP_SECONDS = 5.0  # how often closed pages' state is looked for


def _libc():
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:  # not glibc (macOS, musl): nothing to tune
        return None


def tune_allocator(arena_max: int = ARENA_MAX) -> bool:
    """At server start, before its threads allocate (training children are other processes and keep glibc's
    defaults: see process_setup.warm_allocator). -> whether glibc took the setting."""
    libc = _libc()
    return libc is not None and hasattr(libc, "mallopt") and bool(libc.mallopt(M_ARENA_MAX, arena_max))


def trim() -> None:
    """Give the allocator's free pages back to the kernel (all arenas)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def forget_closed(holder, ttl_seconds: float, now: Optional[datetime.datetime] = None) -> int:
    """Drop Gradio's state of pages closed and not used for ttl_seconds (a page that reconnects keeps using
    its state, so it is never dropped under it). -> how many were dropped."""
    cutoff = (now or datetime.datetime.now()) - datetime.timedelta(seconds=ttl_seconds)
    with holder.lock:
        gone = [key for key, state in holder.session_data.items()
                if state.is_closed and holder.time_last_used.get(key, cutoff) <= cutoff]
    for key in gone:
        holder.delete_state(key)  # its gr.State values' delete_callback, as Gradio's own expiry would
        with holder.lock:
            holder.session_data.pop(key, None)
            holder.time_last_used.pop(key, None)
    return len(gone)


def sweep_forever(holder, ttl: Callable[[], float], released: Callable[[], int],
                  every: float = SWEEP_SECONDS) -> None:
    """Every `every` seconds: forget closed pages' Gradio state; when that or the session registry (released():
    sessions released so far) let go of anything, trim."""
    seen = released()
    while True:
        time.sleep(every)
        try:
            dropped, now_released = forget_closed(holder, ttl()), released()
            if dropped or now_released != seen:
                seen = now_released
                trim()
        except Exception:  # noqa: BLE001 - the sweeper must outlive any one bad state
            pass


def start_sweeper(holder, ttl: Callable[[], float], released: Callable[[], int]) -> threading.Thread:
    thread = threading.Thread(target=sweep_forever, args=(holder, ttl, released), name="memory-sweeper", daemon=True)
    thread.start()
    return thread
