"""Launch the app: flags, limits, the Gradio server, warm-up and a clean shutdown (`transformer-explorer`, app.py)."""
import argparse
import os
import signal
import threading
import time
import traceback

SINGLE_USER_SESSIONS = 8  # browser sessions a single-user server keeps (one person's tabs and reloads)
FORKSERVER_IDLE_SECONDS = 60.0  # a single-user server's training forkserver ends after this long without a run


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="transformer-explorer",
                                description="Train a tiny GPT and look inside it, in the browser.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: localhost only)")
    p.add_argument("--port", type=int, default=7860, help="port to serve on")
    p.add_argument("--model", default="shakespeare", help="shipped model every new session opens on")
    p.add_argument("--max-params", type=int, default=5_000_000, help="largest model a user may train or upload")
    p.add_argument("--max-steps", type=int, default=20_000, help="longest training run, in steps")
    p.add_argument("--max-upload-mb", type=float, default=20.0, help="largest text or checkpoint upload")
    p.add_argument("--max-trainers", type=int, default=2, help="training runs at once on this server")
    p.add_argument("--max-sessions", type=int, default=64, help="browser sessions kept in memory")
    p.add_argument("--run-ttl", type=float, default=300.0,
                   help="seconds a paused or unwatched training run keeps its slot before the server stops it")
    p.add_argument("--resume-ttl", type=float, default=600.0,
                   help="seconds a closed or reloaded page's session (model, data, paused run) waits for it to return")
    p.add_argument("--analysis-workers", type=int, default=2,
                   help="analysis requests served at once (more only queue for the same cores)")
    p.add_argument("--max-heavy-work", type=float, default=600.0, metavar="GOPS",
                   help="the most work one patching, ablation, importance map or whole-text scan may ask for, in "
                        "billions of operations (docs/classroom.md); larger requests are refused with what to shorten")
    p.add_argument("--lesson", metavar="FILE", default=None,
                   help="a lesson file (format: docs/lessons.md) that every new page opens on step 1")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch threads per analysis request in the server (see docs/classroom.md)")
    p.add_argument("--generation-workers", type=int, default=2,
                   help="processes that run Compare's generations (0: in the server process; docs/classroom.md)")
    p.add_argument("--teacher-key", metavar="KEY", default=None,
                   help="the teacher page's key (/teacher?key=KEY); default: a new one, printed at start-up")
    p.add_argument("--class-db", metavar="PATH", default=None,
                   help="keep the answers to lesson questions in this SQLite file (they survive a restart); "
                        "default: in memory only")
    p.add_argument("--root-path", default="", metavar="PATH",
                   help="the path the app is served under behind a proxy (e.g. /user/ana/transformer-explorer)")
    p.add_argument("--single-user", action="store_true",
                   help="serve one person (a JupyterHub student's server, docs/deploying.md): no teacher page, "
                        "Compare in the server process, only the default model loaded at start-up; with "
                        "TRANSFORMER_EXPLORER_SERVICE_URL set, report to the class's hub service")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    from explorer.server.memory import tune_allocator

    tune_allocator()  # before the server's threads allocate (explorer/server/memory.py)
    demo = configured_app(args)
    for sig in (signal.SIGTERM, signal.SIGINT):  # systemd and docker stop with SIGTERM, a terminal with Ctrl-C
        signal.signal(sig, shutdown)
    try:
        start(demo, args)
        if not args.single_user:  # one person computes the lab on their first Show the lab
            precompute_or_say_why()
        release_memory(demo)
        demo.block_thread()
    # show_error=False: our own messages are gr.Error and always shown; Gradio's internal ones are not
    except BaseException:  # shutdown() leaves with os._exit: say why first, and leave with an error code
        traceback.print_exc()
        shutdown(code=1)
    finally:
        shutdown()


def configured_app(args):
    """The app the flags describe, built and queued, not yet serving (SystemExit for a flag it cannot use).
    Only what the page needs is imported before the server answers (Gradio, our layout and controls); torch, the
    models and the callbacks load in warm_up() once it does (docs/benchmarks.md, start-up)."""
    from explorer.common import app_state
    from explorer.common.limits import LIMITS
    from explorer.common.shipped_list import check_model_name
    from explorer.server import gradio_sessions, queue_order, queue_polling
    from explorer.server.gradio_startup import single_app_build
    from explorer.server.http_guard import readable_input_errors

    for name in ("max_params", "max_steps", "max_upload_mb", "max_trainers", "max_sessions", "analysis_workers"):
        setattr(LIMITS, name, getattr(args, name))
    LIMITS.run_ttl_seconds, LIMITS.resume_ttl_seconds = args.run_ttl, args.resume_ttl
    LIMITS.generation_workers = max(0, args.generation_workers)
    LIMITS.max_heavy_gops = max(1.0, args.max_heavy_work)
    if args.single_user:  # what only a room needs, one person does not pay for (docs/deploying.md)
        LIMITS.generation_workers, LIMITS.max_sessions = 0, min(args.max_sessions, SINGLE_USER_SESSIONS)
        app_state.single_user = True
    try:
        check_model_name(args.model)  # fail now, with a clear message, if the model does not exist
    except ValueError as err:
        raise SystemExit(f"--model: {err}") from None
    app_state.default_model = args.model
    args.room = _class_room(args)
    from explorer.ui import build_app

    gradio_sessions.install()  # a new browser session costs ~1 ms instead of 0.1-0.5 s of the server's time
    queue_order.install()  # a flood of brand-new sessions waits behind the classmates already there
    readable_input_errors()  # Gradio's refusals of malformed API calls get a sentence, not an empty message
    with single_app_build():  # launch() builds the one app that serves
        demo = build_app()
        if args.lesson:  # checked against the controls the app just registered; a mistake stops the launch
            from explorer.lessons import checked_lesson_file
            app_state.lesson_file = checked_lesson_file(args.lesson)
        demo.queue(default_concurrency_limit=2, max_size=256)
        queue_polling.relax(demo._queue)  # an idle app kept 6 % of a core polling its empty queue
    return demo


def start(demo, args) -> None:
    """Serve demo (returning at once), report to the class's hub service or print the teacher link, and warm up."""
    from explorer.common import app_state
    from explorer.common.limits import LIMITS
    from explorer.server.http_guard import guarded_app_kwargs
    from explorer.ui import CSS

    app_state.warmed_up.clear()
    demo.launch(server_name=args.host, server_port=args.port, css=CSS, theme="soft", enable_monitoring=False,
                max_file_size=f"{args.max_upload_mb:g}mb", state_session_capacity=LIMITS.max_sessions,
                show_error=False, footer_links=["api"], app_kwargs=guarded_app_kwargs(), prevent_thread_lock=True,
                root_path=args.root_path.rstrip("/"), inline=False, quiet=getattr(args, "quiet", False))
    if args.single_user:
        from explorer.classroom.hub_link import start_class_link

        if getattr(args, "class_link", True):  # a notebook's explorer (transformer_explorer.show) does not report
            start_class_link()  # reports to the hub service, when the hub names one
    else:
        print(f"Teacher page: {_teacher_link(args.host, args.port, args.room.gate.key)}", flush=True)
    warm_up_or_say_why(args.torch_threads, app_state.default_model)  # requests wait for it (app_state)


def _class_room(args):
    """The class (explorer.classroom): its teacher key and answers file; a file it cannot open stops the launch."""
    from explorer.classroom.room import configure

    if args.teacher_key is not None and len(args.teacher_key) < 8:
        raise SystemExit("--teacher-key: use at least 8 characters (students must not guess it).")
    try:
        return configure(args.teacher_key, args.class_db)
    except ValueError as err:
        raise SystemExit(f"--class-db: {err}") from None


def _teacher_link(host: str, port: int, key: str) -> str:
    shown = "<this machine's address>" if host in ("0.0.0.0", "::") else host
    return f"http://{shown}:{port}/teacher?key={key}"


def warm_up_or_say_why(torch_threads: int, default_model: str) -> None:
    """warm_up(), whose failure the server outlives: what it loads is loaded again on first use. Requests wait
    until it has ended (explorer.common.app_state.warmed_up)."""
    from explorer.common import app_state

    began = time.monotonic()
    try:
        warm_up(torch_threads, default_model)
        print(f"Warmed up in {time.monotonic() - began:.1f} s.", flush=True)
    except Exception:  # noqa: BLE001 - a class is better served slowly than not at all
        print("Warm-up failed (the app serves on and loads what it needs on first use):", flush=True)
        traceback.print_exc()
    finally:
        app_state.warmed_up.set()


def precompute_or_say_why() -> None:
    """Once requests run (through the tab's handlers, which wait for the warm-up): the shipped grokking model's
    lab, which every session's Show the lab then reuses. A failure is told; the first click computes it then."""
    try:
        from explorer.tabs.grokking import precompute_shipped_lab

        precompute_shipped_lab()
    except Exception:  # noqa: BLE001 - a class is better served slowly than not at all
        print("Precomputing the grokking lab failed (the first Show the lab computes it):", flush=True)
        traceback.print_exc()


def warm_up(torch_threads: int, default_model: str) -> None:
    """Once the server answers, load what the first page needs first (torch, the default model, the Attention
    tab's code), then the rest: the other shipped models but the pretrained ones, the Train tab's default data,
    scikit-learn, the training children's forkserver. A class that arrives at once then does not queue behind the
    first student to ask for them. A single-user server stops after the first part: one person loads the rest when
    they use it, and its forkserver ends when idle."""
    import torch

    torch.set_num_threads(torch_threads)
    from explorer.common import app_state
    from explorer.common.limits import LIMITS
    from explorer.common.shipped_list import is_pretrained
    from explorer.state.shipped import shipped_models, shipped_template

    shipped_template(default_model)
    import plotly.subplots  # noqa: F401  (the figures' subplot layouts; it imports narwhals)

    import explorer.callbacks.attention  # noqa: F401
    from explorer.callbacks.data import choose_data
    from explorer.state.session import new_session
    from model_core.data.tokenization import BPE_DEFAULT_VOCAB
    from model_core.training import sampling_workers

    sampling_workers.WORKERS = LIMITS.generation_workers
    if app_state.single_user:  # one person loads what they open, when they open it (docs/deploying.md)
        from model_core.training.remote import stop_forkserver_when_idle

        stop_forkserver_when_idle(FORKSERVER_IDLE_SECONDS)
        return
    for name in shipped_models():
        if not is_pretrained(name):  # a pretrained model (540 MB, ~10 s) loads when someone first picks it
            shipped_template(name)
    choose_data(new_session(), "shakespeare", None, "char", BPE_DEFAULT_VOCAB)  # the Train tab's defaults
    if sampling_workers.WORKERS:  # Compare's processes, started beside the rest (a signal never lands inside it)
        threading.Thread(target=sampling_workers.start, name="sampling-workers", daemon=True).start()
    import sklearn.decomposition  # noqa: F401  (the Embeddings tab's PCA; 1-2 s)

    from model_core.training.remote import start_forkserver

    start_forkserver()  # imports torch in the background (seconds): the class's first Start does not wait for it


def release_memory(demo) -> None:
    """From now on, closed pages' Gradio state goes after --resume-ttl and freed memory goes back to the system
    (explorer.server.memory); over --max-sessions, scripts' Gradio state goes before any page's."""
    from explorer.common.limits import LIMITS
    from explorer.server.gradio_sessions import keep_pages_state
    from explorer.server.memory import start_sweeper
    from explorer.state.session import REGISTRY
    from explorer.state.shipped import models_loaded

    keep_pages_state(demo.state_holder, REGISTRY.is_page)

    # trimmed after sessions go and after a model loads (a pretrained model's loader leaves ~200 MB free)
    start_sweeper(demo.state_holder, lambda: LIMITS.resume_ttl_seconds, lambda: REGISTRY.released + models_loaded())


def shutdown(*_signal, code: int = 0) -> None:
    """Stop every training child and the forkserver, remove temp files, and leave at once with exit code `code`
    (threads that serve requests still running must not keep the process alive)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from explorer.common.tempfiles import remove_all
    from explorer.state.session import REGISTRY
    from model_core.training.remote import shutdown_all
    from model_core.training.sampling_workers import shutdown as stop_sampling_workers

    REGISTRY.close_all()
    stop_sampling_workers(final=True)
    shutdown_all(timeout=2.0)
    remove_all()
    print("Transformer Explorer stopped: training processes ended, temp files removed.", flush=True)
    os._exit(code)


if __name__ == "__main__":
    main()
