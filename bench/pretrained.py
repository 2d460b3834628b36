"""python -m bench.pretrained: the pretrained smollm2-135m in this app, measured on this machine.

Run as its own process (the first open is cold): opening the model (first shipped_template, targets <= 8 s) and
for the next session (<= 1 s); the generation path its opening chose (model_core.model.generation_paths) and
every path's greedy tokens/s beside Hugging Face transformers on the same file, taking turns (bench.pretrained_speed;
target: the chosen path >= 1.0x transformers); the Sampling tab's Compare (4 settings) against one generation
(<= 1.5x); each path's greedy chat answers against float32's (>= 9 of 10); the greedy chat answer to "What is the
capital of France?" (must name Paris); then the server's RSS with the model open in --sessions gradio_client
sessions that each pick it and run one Attention call (<= 1.5 GB). It names the CPU first. One table at the end."""
import argparse
import math
import os
import threading
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from bench.results import Row, at_least, at_most, check, info, run_main  # noqa: E402
from bench.server_process import LaunchedApp, MemorySampler, rss_bytes  # noqa: E402
from bench.timing import print_table  # noqa: E402

MODEL = "smollm2-135m"
QUESTION = "What is the capital of France?"
PROMPT = "When Mary and John went to the store, John gave a drink to"
MB = 1e6
TARGETS = {"cold_s": 8.0, "next_session_s": 1.0, "vs_transformers": 1.0, "compare_x": 1.5, "agreement": 0.9,
           "rss_mb": 1500.0}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Open, generate with and serve the pretrained smollm2-135m.")
    p.add_argument("--tokens", type=int, default=64, help="greedy tokens generated for the speed measurement")
    p.add_argument("--threads", type=int, default=2, help="torch threads (the app's default is --torch-threads 1)")
    p.add_argument("--rounds", type=int, default=5, help="turns each contender takes in the side-by-side timings")
    p.add_argument("--compare-tokens", type=int, default=60, help="tokens per setting in the Compare measurement")
    p.add_argument("--agreement-tokens", type=int, default=40, help="greedy tokens per check prompt compared")
    p.add_argument("--sessions", type=int, default=30, help="gradio_client sessions that open the model")
    p.add_argument("--parallel", type=int, default=4, help="sessions started at once")
    p.add_argument("--settle", type=float, default=10.0, help="seconds after the last session before 'settled'")
    p.add_argument("--skip-server", action="store_true", help="only the in-process measurements")
    return p.parse_args(argv)


def opening_seconds() -> dict:
    """Cold: import and first shipped_template in this fresh process; warm: a new session's own copy."""
    began = time.perf_counter()
    from explorer.state.session import new_session
    from explorer.state.shipped import shipped_template

    imported = time.perf_counter()
    shipped_template(MODEL)
    loaded = time.perf_counter()
    session = new_session(MODEL)
    session.inspected.model  # noqa: B018  (its first use: the session's copy, hook points only)
    return {"import": imported - began, "cold": loaded - imported, "next_session": time.perf_counter() - loaded,
            "session": session}


def chat_answer(session) -> str:
    """The greedy chat answer to QUESTION, as the Sampling tab draws it."""
    from explorer.callbacks.sampling import model_text, stop_token
    from model_core.model.sampling import generate

    tok = session.inspected.tokenizer
    chat = tok.encode(model_text(session, QUESTION, True))
    return tok.decode([s.token for s in generate(session.inspected.model, chat, 40, 0.0,
                                                 stop_token=stop_token(tok, True), keep_distributions=False)]).strip()


def generation_rows(session, template, args) -> tuple[list[list], list[Row]]:
    """The chosen path, every path beside transformers (tokens/s), Compare against one generation, agreement:
    (the table's rows, the result rows)."""
    from bench.pretrained_speed import (
        THEIRS,
        agreement,
        compare_against_one,
        path_twins,
        side_by_side,
        threads_note,
        wait_for_choice,
    )
    from explorer.callbacks.sampling import stop_token

    choice = wait_for_choice(template.model)
    one, batch = choice.chosen[1], choice.chosen[max(choice.chosen)]
    rows = [["generation path chosen when it opened: one row / Compare's rows", f"{one} / {batch}",
             "fastest that agrees", f"measured in {choice.seconds:.1f} s; ms a one-token step: " + "; ".join(
                 f"{width} row{'s' if width > 1 else ''}: " + ", ".join(f"{k} {v:.1f}" for k, v in ms.items())
                 for width, ms in choice.ms_per_token.items())]]
    results = [info("generation path chosen when it opened, for one row", one),
               info("generation path chosen when it opened, for Compare's rows", batch)]
    twins, ids = path_twins(template.model), session.inspected.tokenizer.encode(PROMPT)
    race = side_by_side(twins, ids, args.tokens, args.rounds)
    speed, theirs = race["tokens_per_s"], race["tokens_per_s"][THEIRS]
    for name, value in speed.items():
        mark = " (chosen)" if name.endswith(f" {one} path") else ""
        label = f"greedy {args.tokens} tokens, KV cache, {threads_note()}: {name}{mark}"
        rows.append([label, f"{value:.1f} tokens/s", ">= 1.0x transformers" if mark else "",
                     f"{value / theirs:.2f}x transformers; same tokens as transformers: {race['same_tokens'][name]}"])
        results.append(info(label, value, "tokens/s"))
        if mark:
            results.append(at_least(f"{label} / transformers", value / theirs, "x", TARGETS["vs_transformers"]))
    seconds = compare_against_one(session.inspected.model, ids, args.compare_tokens, args.rounds)
    single, four = seconds.values()
    label = f"Compare, 4 settings x {args.compare_tokens} tokens / one generation"
    rows.append([label, f"{four / single:.2f}x", "<= 1.5x", f"{four:.2f} s vs {single:.2f} s"])
    results.append(at_most(label, four / single, "x", TARGETS["compare_x"]))
    tok = session.inspected.tokenizer
    found = agreement(template.model, twins, tok, args.agreement_tokens, stop_token(tok, True))
    table, judged = agreement_rows(found, one, args.agreement_tokens)
    rows, results = rows + table, results + judged
    answer = chat_answer(session)
    rows.append([f"greedy chat answer to {QUESTION!r}", repr(answer[:60]), "names Paris",
                 "yes" if "Paris" in answer else "NO"])
    results.append(check(f"greedy chat answer to {QUESTION!r}", answer[:60], "names Paris", "Paris" in answer))
    print(f"transformers read the file in {race['load_seconds']:.0f} s", flush=True)
    return rows, results


def agreement_rows(found: dict[str, list[int]], chosen: str, tokens: int) -> tuple[list[list], list[Row]]:
    """(the table's rows, the result rows) of each path's greedy chat answers against float32's; the target
    (9 of 10) judges the path chosen for one row: the others only inform (the choice skips a path that fails)."""
    table, rows = [], []
    for name, agree in found.items():
        label = f"{name} path: greedy chat answers equal to float32's ({len(agree)} x {tokens})"
        equal = sum(a == tokens for a in agree)
        table.append([label, f"{equal} of {len(agree)}", ">= 9 of 10", f"tokens before the first difference: {agree}"])
        rows.append(at_least(label, equal, f"of {len(agree)}", math.ceil(TARGETS["agreement"] * len(agree)))
                    if name == chosen else info(label, equal, f"of {len(agree)}"))
    return table, rows


def class_session(url: str, errors: list, opened: list, lock: threading.Lock) -> None:
    """One student: pick the model, run Attention, generate 20 tokens (the generation twin is built once, for
    all); the client stays open (its session kept) until the end."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    try:
        client.predict(name=MODEL, api_name="/use_shipped_model")
        client.predict(prompt=PROMPT, layer=3, head=0, api_name="/attention")
        client.predict(prompt=PROMPT, temperature=0.0, max_new_tokens=20, api_name="/generate")
    except Exception as err:  # noqa: BLE001 - counted and reported
        errors.append(f"{type(err).__name__}: {str(err)[:120]}")
    with lock:
        opened.append(client)


def server_memory(args) -> dict:
    """Server RSS at start, after the first session opened the model, peak and settled with all sessions open."""
    with LaunchedApp([]) as app, MemorySampler(app.proc.pid, interval=0.25) as rss:
        time.sleep(args.settle)  # the warm-up (default model, data, scikit-learn)
        server = app.proc.pid
        start = rss_bytes(server)
        errors, opened, lock = [], [], threading.Lock()
        began = time.monotonic()
        class_session(app.url, errors, opened, lock)
        first = time.monotonic() - began
        one = rss_bytes(server)
        for i in range(1, args.sessions, args.parallel):
            batch = [threading.Thread(target=class_session, args=(app.url, errors, opened, lock))
                     for _ in range(min(args.parallel, args.sessions - i))]
            for t in batch:
                t.start()
            for t in batch:
                t.join()
        took = time.monotonic() - began
        time.sleep(args.settle)
        settled = rss_bytes(server)
        for client in opened:
            client.close()
        return {"start": start, "one": one, "peak": rss.peak_server, "settled": settled, "first_pick": first,
                "all_sessions": took, "errors": errors}


def server_rows(mem: dict, sessions: int) -> tuple[list[list], list[Row]]:
    """(the table's rows, the result rows) of the server's memory with the model open in many sessions."""
    table = [["server RSS at start (model not loaded)", f"{mem['start'] / MB:.0f} MB", "", ""],
             ["server RSS after the first pick", f"{mem['one'] / MB:.0f} MB", "",
              f"first pick + Attention {mem['first_pick']:.1f} s"],
             [f"server RSS, {sessions} sessions with smollm2 open", f"{mem['settled'] / MB:.0f} MB",
              "<= 1500 MB", f"peak {mem['peak'] / MB:.0f} MB; {len(mem['errors'])} errors; "
                            f"{mem['all_sessions']:.0f} s for all"]]
    rows = [info("server RSS at start (model not loaded)", mem["start"] / MB, "MB"),
            info("server RSS after the first pick", mem["one"] / MB, "MB"),
            at_most(f"server RSS, {sessions} sessions with smollm2 open", mem["settled"] / MB, "MB", TARGETS["rss_mb"]),
            info(f"server RSS peak, {sessions} sessions", mem["peak"] / MB, "MB"),
            info(f"failed calls, {sessions} sessions", len(mem["errors"]))]
    return table, rows


def measure(argv=None) -> list[Row]:
    args = parse_args(argv)
    import torch

    from bench.machine import cpu_description
    from bench.pretrained_views import require_model
    from explorer.state.shipped import shipped_template

    require_model(MODEL)
    torch.set_num_threads(args.threads)
    print(f"{cpu_description()}; {args.threads} torch threads; load average {os.getloadavg()[0]:.1f}", flush=True)
    opening = opening_seconds()
    rows = [["open smollm2 cold (first shipped_template)", f"{opening['cold']:.1f} s", "<= 8 s",
             f"+ {opening['import']:.1f} s of imports"],
            ["open it for the next session", f"{opening['next_session']:.2f} s", "<= 1 s", "GPT.copy: hook points"]]
    results = [at_most("open smollm2 cold (first shipped_template)", opening["cold"], "s", TARGETS["cold_s"]),
               info("imports before it", opening["import"], "s"),
               at_most("open it for the next session", opening["next_session"], "s", TARGETS["next_session_s"])]
    table, found = generation_rows(opening["session"], shipped_template(MODEL), args)
    rows, results = rows + table, results + found
    if not args.skip_server:
        mem = server_memory(args)
        table, found = server_rows(mem, args.sessions)
        rows, results = rows + table, results + found
        for line in mem["errors"][:5]:
            print("   error:", line)
    print_table(f"smollm2-135m on this machine (load average {os.getloadavg()[0]:.1f})",
                ["measure", "value", "target", "note"], rows)
    return results


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
