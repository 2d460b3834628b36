"""python -m bench.pretrained: the pretrained smollm2-135m in this app, measured on this machine.

Run as its own process (the first open is cold): opening the model (first shipped_template, targets <= 8 s) and
for the next session (<= 1 s), greedy generation with the KV cache (>= 20 tokens/s), the greedy chat answer to
"What is the capital of France?" (must name Paris), then the server's RSS with the model open in --sessions
gradio_client sessions that each pick it and run one Attention call (<= 1.5 GB). One table at the end."""
import argparse
import os
import threading
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from bench.server_process import LaunchedApp, MemorySampler, rss_bytes  # noqa: E402
from bench.timing import print_table  # noqa: E402

MODEL = "smollm2-135m"
QUESTION = "What is the capital of France?"
PROMPT = "When Mary and John went to the store, John gave a drink to"
MB = 1e6


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Open, generate with and serve the pretrained smollm2-135m.")
    p.add_argument("--tokens", type=int, default=64, help="greedy tokens generated for the speed measurement")
    p.add_argument("--threads", type=int, default=2, help="torch threads for the generation measurement")
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
    session.model  # noqa: B018  (its first use: the session's copy, hook points only)
    return {"import": imported - began, "cold": loaded - imported, "next_session": time.perf_counter() - loaded,
            "session": session}


def generation(session, tokens: int, threads: int) -> dict:
    """Greedy tokens/s with the KV cache (after one warm-up generation), and the greedy chat answer."""
    import torch

    from explorer.callbacks.sampling import model_text, stop_token
    from model_core.model.sampling import generate

    torch.set_num_threads(threads)
    tok, model = session.tokenizer, session.model
    ids = tok.encode(PROMPT)
    list(generate(model, ids, 4, 0.0, keep_distributions=False))
    began, cpu = time.perf_counter(), time.process_time()
    steps = list(generate(model, ids, tokens, 0.0, keep_distributions=False))
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    chat = tok.encode(model_text(session, QUESTION, True))
    answer = [s.token for s in generate(model, chat, 40, 0.0, stop_token=stop_token(tok, True),
                                        keep_distributions=False)]
    return {"tokens_per_s": len(steps) / wall, "cpu_tokens_per_s": len(steps) * threads / cpu,
            "answer": tok.decode(answer).strip()}


CHAT_PROMPTS = (QUESTION, "Name three colours.", "What is 2+2?", "Write a haiku about the sea.",
                "Who wrote Romeo and Juliet?", "What is the largest planet?", "Translate 'cat' to French.",
                "Say hello.", "Why is the sky blue?", "List the days of the week.")


def twin_agreement(session, tokens: int = 40) -> list[int]:
    """For each chat prompt: how many greedy tokens the bfloat16 generation twin draws before it first differs
    from the float32 model (a hook attached makes generation run the model itself, uncached)."""
    from explorer.callbacks.sampling import model_text
    from model_core.model.sampling import generate

    tok, model = session.tokenizer, session.model
    agree = []
    for question in CHAT_PROMPTS:
        ids = tok.encode(model_text(session, question, True))
        twin = [s.token for s in generate(model, ids, tokens, 0.0, keep_distributions=False)]
        handle = model.hook_dict["ln_final.hook_normalized"].add_hook(lambda tensor, hook: tensor)
        try:
            plain = [s.token for s in generate(model, ids, tokens, 0.0, keep_distributions=False)]
        finally:
            handle.remove()
        agree.append(next((i for i, (a, b) in enumerate(zip(twin, plain)) if a != b), tokens))
    return agree


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


def main(argv=None) -> None:
    args = parse_args(argv)
    opening = opening_seconds()
    gen = generation(opening["session"], args.tokens, args.threads)
    rows = [["open smollm2 cold (first shipped_template)", f"{opening['cold']:.1f} s", "<= 8 s",
             f"+ {opening['import']:.1f} s of imports"],
            ["open it for the next session", f"{opening['next_session']:.2f} s", "<= 1 s", "GPT.copy: hook points"],
            [f"greedy generation, KV cache, {args.threads} threads", f"{gen['tokens_per_s']:.1f} tokens/s", ">= 20",
             f"{gen['cpu_tokens_per_s']:.1f} tokens per CPU-second x {args.threads} threads"],
            [f"greedy chat answer to {QUESTION!r}", repr(gen["answer"][:60]), "names Paris",
             "yes" if "Paris" in gen["answer"] else "NO"]]
    agree = twin_agreement(opening["session"])
    rows.append([f"greedy chat answers equal to float32's ({len(agree)} prompts x 40 tokens)",
                 f"{sum(a == 40 for a in agree)} of {len(agree)}", "", f"tokens before the first difference: {agree}"])
    if not args.skip_server:
        mem = server_memory(args)
        rows += [["server RSS at start (model not loaded)", f"{mem['start'] / MB:.0f} MB", "", ""],
                 ["server RSS after the first pick", f"{mem['one'] / MB:.0f} MB", "",
                  f"first pick + Attention {mem['first_pick']:.1f} s"],
                 [f"server RSS, {args.sessions} sessions with smollm2 open", f"{mem['settled'] / MB:.0f} MB",
                  "<= 1500 MB", f"peak {mem['peak'] / MB:.0f} MB; {len(mem['errors'])} errors; "
                                f"{mem['all_sessions']:.0f} s for all"]]
        for line in mem["errors"][:5]:
            print("   error:", line)
    print_table(f"smollm2-135m on this machine (load average {os.getloadavg()[0]:.1f})",
                ["measure", "value", "target", "note"], rows)


if __name__ == "__main__":
    main()
