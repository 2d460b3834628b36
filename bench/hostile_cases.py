"""The cases of bench.hostile_class: issue #28's "Why" list and the cause-5/6/7 cases that reach the API. Each
has a setup (not timed) and a run that returns {"answer": what the mischievous student read, "answer_s": how long
until then, optionally "bystander_s": a bystander's heavy request's latency}."""
import json
import math
import re
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from gradio_client import Client, handle_file

from bench import hostile_files
from bench.hostile_client import (
    TeacherPage,
    browser_session,
    key_attempt,
    new_client,
    private_call,
    raw_call,
    timed_call,
)

STORY = ("the tower stood by the river and the people of the city walked past it every morning on their way to the "
         "market where they sold bread and fish and cloth and the children ran between the stalls while the old men "
         "sat in the shade and talked about the weather and the king and the war that had ended many years before "
         "when their fathers were young and the city was smaller and poorer than it is now ")
LONG_TEXT = STORY * 2 + " ".join(STORY.split()[:40])  # about 200 SmolLM2 tokens
SPAN_PAIR = ("VOLUMNIA:\nGood morrow.\n\nV", "VOVUMNIA:\nGood morrow.\n\nV")  # "O" against "I": 0.003 logits apart


@dataclass
class Context:
    url: str
    folder: Path
    key: str
    attacker: Client = None
    bystander: Client = None  # a classmate's heavy request beside the attacker's (case c)
    notes: dict = field(default_factory=dict)


@dataclass
class Case:
    title: str
    run: Callable[[Context], dict]
    setup: Callable[[Context], None] = lambda ctx: setattr(ctx, "attacker", new_client(ctx.url))
    app_args: Callable[[Path], list] = lambda folder: []
    needs: str = ""  # whose fix the case depends on, when not this branch's


FILES = {"nanogpt": hostile_files.nanogpt_wide, "chat": hostile_files.zip_chat_loops,
         "head_stats": hostile_files.zip_head_stats_list, "words": hostile_files.text_unique_words}


def write_files(folder: Path) -> None:
    """The crafted files of bench.hostile_files the cases upload, each in a subfolder named as in FILES."""
    for name, build in FILES.items():
        build(folder / name)


def _said(ok: bool, result) -> str:
    text = result if isinstance(result, str) else json.dumps(result, default=str)
    return ("result: " if ok else "sentence: ") + " ".join(str(text).split())[:300]


def _answer(seconds: float, ok: bool, result) -> dict:
    return {"answer_s": seconds, "answer": _said(ok, result)}


# ------------------------------------------------------------------ the "Why" list

def nanogpt_as_b(ctx: Context) -> dict:
    files = {"ckpt_upload": handle_file(str(ctx.folder / "nanogpt" / "ckpt.pt")),
             "meta_upload": handle_file(str(ctx.folder / "nanogpt" / "meta.pkl"))}
    return _answer(*timed_call(ctx.attacker, "/model_b_nanogpt", 60, **files))


def looping_template_setup(ctx: Context) -> None:
    ctx.attacker = new_client(ctx.url)
    ctx.attacker.predict(upload=handle_file(str(ctx.folder / "chat" / "model.zip")), api_name="/load_model")


def looping_template(ctx: Context) -> dict:
    return _answer(*timed_call(ctx.attacker, "/generate", 60, prompt="hello", max_new_tokens=5, chat_format=True))


BYSTANDER_ABLATION = dict(prompt="ROMEO: hear me speak.", max_new_tokens=120)


def smollm2_setup(ctx: Context) -> None:
    """The attacker on SmolLM2; the bystander's /ablate (the default model) once to warm up."""
    ctx.attacker = new_client(ctx.url)
    ctx.attacker.predict(name="smollm2-135m", api_name="/use_shipped_model")
    ctx.bystander = new_client(ctx.url)
    ctx.bystander.predict(**BYSTANDER_ABLATION, api_name="/ablate")


def patching_with_a_bystander(ctx: Context, clean: str, corrupted: str) -> dict:
    """The bystander's /ablate alone, then the attacker's patching and 1 s later the bystander's /ablate again
    (the default model; both times beside the same background: the classmate, the bystander's views)."""
    ctx.notes["alone"] = timed_call(ctx.bystander, "/ablate", 120, **BYSTANDER_ABLATION)[0]
    found = {}
    thread = threading.Thread(target=lambda: found.update(
        attacker=timed_call(ctx.attacker, "/activation_patching", 120, clean=clean, corrupted=corrupted,
                            kind="residual stream (layer × position)")))
    thread.start()
    time.sleep(1.0)
    bystander = timed_call(ctx.bystander, "/ablate", 120, **BYSTANDER_ABLATION)
    thread.join(130)
    out = _answer(*found["attacker"])
    out["bystander_s"] = bystander[0] if bystander[1] else math.inf
    out["bystander_alone_s"] = ctx.notes["alone"]
    out["answer"] += (f" | bystander's /ablate: {bystander[0]:.1f} s ({ctx.notes['alone']:.1f} s alone just before), "
                      f"{'answered' if bystander[1] else bystander[2]}")
    return out


def long_patching(ctx: Context) -> dict:
    return patching_with_a_bystander(ctx, "Paris " + LONG_TEXT, "Rome " + LONG_TEXT)


def largest_patching_setup(ctx: Context) -> None:
    """The longest prompts the server's limit allows (from its own refusal's sentence), differing at the start."""
    smollm2_setup(ctx)
    _, ok, said = timed_call(ctx.attacker, "/activation_patching", 60, clean="Paris " + LONG_TEXT,
                             corrupted="Rome " + LONG_TEXT, kind="residual stream (layer × position)")
    longest = int(re.search(r"at most (\d+) tokens", str(said)).group(1)) if not ok else 400
    words = STORY.split()
    ctx.notes["words"] = max(1, longest - 2)  # about a token a word in this plain text
    ctx.notes["clean"] = " ".join(["Paris", *words[:ctx.notes["words"]]])
    ctx.notes["corrupted"] = " ".join(["Rome", *words[:ctx.notes["words"]]])


def largest_patching(ctx: Context) -> dict:
    return patching_with_a_bystander(ctx, ctx.notes["clean"], ctx.notes["corrupted"])


def anonymous_flood(ctx: Context, sessions: int = 200, at_once: int = 8, words: int = 0) -> dict:
    """sessions fresh API sessions, each asking /attention once on a prompt of its own (after `words` words of a
    story), at_once at a time."""
    def one(i: int):
        client = new_client(ctx.url)
        spelt = "".join("abcdefghij"[int(d)] for d in str(i))  # letters: every prompt differs, even dropping digits
        prompt = " ".join([*STORY.split()[:words], f"Hear me, citizen {spelt}"])
        return timed_call(client, "/attention", 60, prompt=prompt, layer=0, head=0, query=-1, drop_unknown=True)
    began = time.monotonic()
    with ThreadPoolExecutor(at_once) as pool:
        calls = list(pool.map(one, range(sessions)))
    answered = sum(ok for _, ok, _ in calls)
    return {"answer_s": max(s for s, _, _ in calls),
            "answer": f"{answered}/{sessions} fresh sessions answered (the slowest's time shown) in "
                      f"{time.monotonic() - began:.0f} s, {at_once} at once"}


# ------------------------------------------------------------------ causes 5, 6 and 7

def unique_words_upload(ctx: Context) -> dict:
    return _answer(*timed_call(ctx.attacker, "/data", 60, corpus="shakespeare", kind="word",
                               upload=handle_file(str(ctx.folder / "words" / "words.txt"))))


def empty_head_stats(ctx: Context) -> dict:
    seconds, ok, said = timed_call(ctx.attacker, "/load_model", 60,
                                   upload=handle_file(str(ctx.folder / "head_stats" / "model.zip")))
    if not ok:
        return _answer(seconds, ok, said)
    more, ok, said = timed_call(ctx.attacker, "/head_training", 60, layer=0, head=0)
    return _answer(seconds + more, ok, said)


def names(ctx: Context) -> dict:
    began = time.monotonic()
    me = browser_session(ctx.url)
    teacher_ok, teacher_said = private_call(ctx.url, me.session_hash, "set_name", ["you (the teacher)"])
    _, copied = private_call(ctx.url, me.session_hash, "set_name", ["ana"])
    _, view = TeacherPage(ctx.url, ctx.key).get("/teacher/api/class")
    shown = sorted(row["name"] for row in view["students"] if not row["name"].startswith("(no name)"))
    return {"answer_s": time.monotonic() - began,
            "answer": f"'you (the teacher)': {_said(teacher_ok, teacher_said)[:110]} | 'ana' kept as {copied} | the "
                      f"teacher sees {shown}"}


def parallel_keys(ctx: Context, attempts: int = 40) -> dict:
    began = time.monotonic()
    with ThreadPoolExecutor(attempts) as pool:
        statuses = list(pool.map(lambda i: key_attempt(ctx.url, f"guess-{i}"), range(attempts)))
    counts = {status: statuses.count(status) for status in sorted(set(statuses))}
    return {"answer_s": time.monotonic() - began,
            "answer": f"{attempts} wrong keys at once from one address: HTTP statuses {counts} (403: checked and "
                      "refused, slowly; 429: refused unread)"}


def locked_class_db(ctx: Context) -> dict:
    path = ctx.folder / "class.db"
    me = browser_session(ctx.url)
    private_call(ctx.url, me.session_hash, "set_name", ["Ben"])
    private_call(ctx.url, me.session_hash, "open_lesson", ["attention-basics"])
    lock = sqlite3.connect(path)
    lock.execute("BEGIN EXCLUSIVE")
    began = time.monotonic()
    ok, said = private_call(ctx.url, me.session_hash, "send_answer", [None, "just left of the diagonal", ""])
    took = time.monotonic() - began
    teacher = TeacherPage(ctx.url, ctx.key)
    status, view = teacher.get("/teacher/api/class")
    note = view.get("answers_note") if isinstance(view, dict) else view
    lock.rollback()
    teacher.get("/teacher/api/class")  # the file is free: what waited is written
    lock.close()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT name, answer FROM answers").fetchall()
    return {"answer_s": took, "answer": f"student: {_said(ok, said)[:120]} | teacher page while locked: HTTP "
                                        f"{status}, {str(note)[:60]} | in the file afterwards: {rows}"}


def tiny_span_patching(ctx: Context) -> dict:
    seconds, ok, result = timed_call(ctx.attacker, "/activation_patching", 60, clean=SPAN_PAIR[0],
                                     corrupted=SPAN_PAIR[1], target="O", baseline="I")
    return _answer(seconds, ok, result[1] if ok else result)


MALFORMED = {"NaN": math.nan, "Infinity": math.inf, "lone surrogate": "ROMEO \ud83d",
             "server path": {"path": "/etc/hostname", "meta": {"_type": "gradio.FileData"}}}


def malformed_requests(ctx: Context) -> dict:
    """Every public endpoint, each input replaced by each malformed value, plus too few inputs: how many answers
    came without a sentence."""
    api = ctx.attacker.view_api(return_format="dict", print_info=False)["named_endpoints"]
    silent, total, slowest = [], 0, 0.0
    for name, info in api.items():
        if name in ("/train_start", "/init_model"):
            continue  # a valid call would start a run
        defaults = [p.get("parameter_default") for p in info["parameters"]]
        calls = [(f"{i}:{k}", [*defaults[:i], v, *defaults[i + 1:]]) for i in range(len(defaults))
                 for k, v in MALFORMED.items()] + ([("too few", defaults[:-1])] if defaults else [])
        for label, data in calls:
            total += 1
            began = time.monotonic()
            ok, result = raw_call(ctx.attacker, name[1:], data)
            slowest = max(slowest, time.monotonic() - began)
            if not ok and not (isinstance(result, str) and result.strip()):
                silent.append(f"{name} {label}")
    return {"answer_s": slowest, "answer": f"{len(silent)} of {total} malformed requests refused without a sentence "
                                           f"{silent[:4]}"}


CASES = {
    "a": Case("1 kB nanoGPT ckpt.pt (24 layers x 8,192) as model B", nanogpt_as_b, needs="h28a"),
    "b": Case("BPE .zip whose chat template loops, then /generate in chat format", looping_template,
              setup=looping_template_setup, needs="h28a"),
    "c": Case("~200-token SmolLM2 /activation_patching, a bystander's /ablate 1 s later", long_patching,
              setup=smollm2_setup),
    "c2": Case("the longest SmolLM2 patching the limit allows, a bystander's /ablate 1 s later", largest_patching,
               setup=largest_patching_setup),
    "d": Case("200 fresh API sessions each /attention, a classmate's page holds a changed model", anonymous_flood),
    "d2": Case("the same with SmolLM2 as every session's model (--model smollm2-135m), 60-word prompts",
               lambda ctx: anonymous_flood(ctx, words=60), app_args=lambda folder: ["--model", "smollm2-135m"]),
    "5": Case("20 MB of unique words as training text, word tokenizer", unique_words_upload, needs="h28a"),
    "7a": Case("a checkpoint whose snapshots.json has \"head_stats\": []", empty_head_stats, needs="h28a"),
    "7b": Case("names: 'you (the teacher)', and a classmate's name", names),
    "7c": Case("40 wrong teacher keys at once from one address", parallel_keys),
    "7d": Case("an answer while --class-db is locked by another program", locked_class_db,
               setup=lambda ctx: None, app_args=lambda folder: ["--class-db", str(folder / "class.db")]),
    "7e": Case("patching prompts 0.003 logits apart", tiny_span_patching),
    "7f": Case("malformed raw requests (NaN, Infinity, lone surrogate, server path, too few inputs)",
               malformed_requests),
}
