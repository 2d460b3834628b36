"""compare() in worker processes, so that a server's generations do not share its Python lock.

A generation is ~140 small torch ops per token, and each op lets go of the GIL and takes it back. In a server whose
other threads run Python (a class's views, Gradio's queue), every take-back waits for another thread's turn: a
4 x 150-token Compare that takes 0.4 s alone took 5-10 s under a 30-student class while the GIL was busy less
than half the time (py-spy, docs/classroom.md). In a worker process it has a GIL of its own.

The model travels as its config and weights (a few MB for the models a class trains, ~5 ms); a frozen model (a
pretrained one, hundreds of MB) is compared where it is. Workers fork from the training forkserver (torch already
imported) at normal priority with one thread each, and die with it (model_core.training.process_setup)."""
import concurrent.futures
import os
import threading
import time
from typing import Optional, Sequence

import torch

from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from model_core.model.sampling import Completion, SamplingSettings, compare

WORKERS = 0  # processes, generations at once; 0: in the calling process (the app sets --generation-workers, 2)
RESULT_TIMEOUT = 300.0  # seconds; a longer wait means a stuck worker
WATCH_SECONDS = 1.0  # how often a worker checks that the app that started it is alive
_pool: Optional[concurrent.futures.ProcessPoolExecutor] = None
_closed = False  # the app is shutting down: no new pool (it would start a new forkserver)
_lock = threading.Lock()


def compare_in_worker(model: GPT, prompt_ids: Sequence[int], settings: Sequence[SamplingSettings],
                      max_new_tokens: int, seed: int = 0, stop_token: Optional[int] = None) -> list[Completion]:
    """compare(model, ...) run by a worker process: the same completions, token for token. A frozen model, or a
    worker pool that broke (a worker killed), is compared in this process."""
    if model.frozen or WORKERS == 0 or _closed:
        return compare(model, prompt_ids, settings, max_new_tokens, seed=seed, stop_token=stop_token)
    weights = {name: t.detach().numpy() for name, t in model.state_dict().items()}  # plain arrays: pickled as bytes
    job = (model.cfg.to_dict(), weights, list(prompt_ids), list(settings), max_new_tokens, seed, stop_token)
    try:
        return pool().submit(compare_from_weights, *job).result(timeout=RESULT_TIMEOUT)
    except (concurrent.futures.process.BrokenProcessPool, RuntimeError):  # a worker killed; a pool shut down
        shutdown()  # the next call starts a fresh pool
        return compare(model, prompt_ids, settings, max_new_tokens, seed=seed, stop_token=stop_token)


def compare_from_weights(config: dict, weights: dict, prompt_ids, settings, max_new_tokens, seed, stop_token):
    """In a worker: the model from its config and weights, then compare()."""
    model = GPT.with_weights(GPTConfig.from_dict(config), {k: torch.from_numpy(v) for k, v in weights.items()})
    return compare(model, prompt_ids, settings, max_new_tokens, seed=seed, stop_token=stop_token)


def pool() -> concurrent.futures.ProcessPoolExecutor:
    """The worker pool, started on first use (RuntimeError once the app is shutting down)."""
    global _pool
    with _lock:
        if _closed:
            raise RuntimeError("the app is shutting down")
        if _pool is None:
            from model_core.training.remote import CONTEXT

            _pool = concurrent.futures.ProcessPoolExecutor(WORKERS, mp_context=CONTEXT, initializer=_start_worker,
                                                           initargs=(os.getpid(),))
        return _pool


def start() -> bool:
    """Start the workers now (the app's warm-up), so the first Compare does not wait for them; -> whether they
    started (if not, Compare runs in this process and the next call tries again)."""
    try:
        executor = pool()
        for future in [executor.submit(int, 0) for _ in range(WORKERS)]:
            future.result(timeout=RESULT_TIMEOUT)
        return True
    except (concurrent.futures.process.BrokenProcessPool, concurrent.futures.TimeoutError, OSError, RuntimeError):
        shutdown()
        return False


def _start_worker(app_pid: int) -> None:
    """A worker's set-up. It dies with the forkserver (PDEATHSIG), and also ends by itself once the app that started
    it has gone: a forkserver child holds the forkserver's liveness pipe, so a forkserver outliving a killed app
    would keep its children alive, and they it."""
    from model_core.training.process_setup import die_with_parent, warm_allocator

    die_with_parent()
    torch.set_num_threads(1)
    warm_allocator()
    threading.Thread(target=_exit_without, args=(app_pid,), name="app-watch", daemon=True).start()


def _exit_without(app_pid: int) -> None:
    from model_core.training.process_setup import process_alive

    while process_alive(app_pid):
        time.sleep(WATCH_SECONDS)
    os._exit(0)


def shutdown(final: bool = False) -> None:
    """End the workers at once (a broken pool; final: the app's shutdown, after which no pool starts again). Safe
    in a signal handler: it waits for no lock another thread may hold for long, and kills rather than asks."""
    global _pool, _closed
    locked = _lock.acquire(timeout=1.0)
    try:
        executor, _pool = _pool, None
        _closed = _closed or final
    finally:
        if locked:
            _lock.release()
    if executor is None:
        return
    processes = list((executor._processes or {}).values())  # noqa: SLF001 - the pool does not kill them itself
    if not final:
        executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.kill()
    for process in processes:
        process.join(0.5)


def worker_pids() -> list[int]:
    executor = _pool
    return [] if executor is None else [p.pid for p in (executor._processes or {}).values()]  # noqa: SLF001
