"""Bad input through the launched app: a few hundred hostile calls across every API endpoint.

Each case asserts that the call is refused (or answered) with a message a student can read: no Python repr,
no exception class name, none of Gradio's preprocessing text. Then the same session must still answer a
normal call. One app and one gradio_client Client (one session) for the module: uploads go through the
Client, other calls through the REST route it documents (/gradio_api/call/<name>) in the Client's session,
which also carries what JSON cannot (NaN, ±infinity) and keeps the module fast on two cores.
"""
import io
import json
import math
import re
import zipfile

import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from bench.hostile_client import http_connection as _connection
from bench.hostile_client import raw_call
from explorer.callbacks.train_fields import FIELD_RULES
from explorer.common.controls import ARCH_FIELDS, OPTIM_FIELDS
from tests.helpers import APP_PIDS, rss_mb

PROMPT = "ROMEO:"
HEADERS = ["temperature", "top_k", "top_p", "min_p"]
TABLE = {"headers": HEADERS, "data": [[1.0, 0, 1.0, 0.0]]}
# /train_start's inputs, in order
TRAIN_FIELDS = ("corpus", "kind", "bpe_vocab", *ARCH_FIELDS, *OPTIM_FIELDS, "val_split")

# A valid call per endpoint that takes inputs; each case breaks one of them.
NORMAL = {
    "attention": [PROMPT, 1, 1, -1, False],
    "residual": [PROMPT, 0, "norm", False],
    "embeddings": [PROMPT, "2", 0, False],
    "ffn": [PROMPT, 0, 0, False],
    "next_token": [PROMPT, 1.0, 0, 1.0, 0.0, False, False],
    "compare": [PROMPT, TABLE, 5, 0, False, False],
    "generate": [PROMPT, 1.0, 0, 1.0, 0.0, 5, 0, False, False],
    "snapshot": [1.0],
    "data": ["first-names", None, "char", 512, "10%"],
    "blocks": [PROMPT, 0, False],
    "logit_attribution": [PROMPT, -1, "", "", False],
    "activation_patching": ["VOLUMNIA:\nGood morrow.\n\nV", "VIRGILIA:\nGood morrow.\n\nV",
                            "each head, all positions (layer × head)", 0, "", "", False],
}
# Position of every numeric parameter (test_every_numeric_parameter_is_covered checks this against the API).
NUMERIC = {
    "attention": {1: "layer", 2: "head", 3: "query"},
    "residual": {1: "layer"},
    "embeddings": {2: "layer"},
    "ffn": {1: "layer", 2: "neuron"},
    "next_token": {1: "temperature", 2: "top_k", 3: "top_p", 4: "min_p"},
    "compare": {2: "max_new_tokens", 3: "seed"},
    "generate": {1: "temperature", 2: "top_k", 3: "top_p", 4: "min_p", 5: "max_new_tokens", 6: "seed"},
    "snapshot": {0: "progress"},
    "data": {3: "bpe_vocab"},
    "blocks": {1: "layer"},
    "logit_attribution": {1: "position"},
    "activation_patching": {3: "layer"},
}
TRAIN_NUMERIC = ("bpe_vocab", *(f for f in (*ARCH_FIELDS, *OPTIM_FIELDS) if f in FIELD_RULES))
BAD_NUMBERS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "negative": -1, "1e30": 1e30,
               "2**70": 2**70, "text": "abc", "list": [1], "none": None, "bool": True}
BAD_PROMPTS = {"empty": "", "spaces": "   \n\t ", "huge": "ROMEO: " * 15_000, "control": "RO\x00\x07\x1bMEO",
               "emoji": "ROMEO 🙂👍🏽", "surrogate": "ROMEO \ud83d", "unknown": "Ω≈ç√∫ ROMEO",
               "newlines": "\n" * 5000,
               "number": 12345, "list": ["ROMEO:"], "none": None}
PROMPTED = ("attention", "residual", "embeddings", "ffn", "next_token", "compare", "generate", "blocks",
            "logit_attribution", "activation_patching")
BAD_CHOICES = {("residual", 2): ["weird", 3, ["norm"]], ("embeddings", 1): ["4", 3.5, True, {"a": 1}],
               ("data", 0): ["nope", 7, ["first-names"]], ("data", 2): ["zzz", 1, ["char"]],
               ("data", 4): ["half", 0.5, ["none"]]}
BAD_TABLES = {
    "empty": {"headers": HEADERS, "data": []}, "blank row": {"headers": HEADERS, "data": [[None] * 4]},
    "100 rows": {"headers": HEADERS, "data": [[1.0, 0, 1.0, 0.0]] * 100},
    "strings": {"headers": HEADERS, "data": [["hot", "many", "most", "few"]]},
    "nan": {"headers": HEADERS, "data": [[math.nan, 0, 1.0, 0.0]]},
    "inf": {"headers": HEADERS, "data": [[1.0, math.inf, 1.0, 0.0]]},
    "ragged": {"headers": HEADERS, "data": [[1.0], [1.0, 0, 1.0, 0.0, 9, 9]]},
    "nested": {"headers": HEADERS, "data": [[[1.0, 0], [1.0, 0]]]},
    "out of range": {"headers": HEADERS, "data": [[-1.0, -5, 2.0, 7.0]]},
    "not a table": "temperature=1", "flat list": [1.0, 0, 1.0, 0.0], "number": 42, "none": None,
    "no data key": {"headers": HEADERS}, "data not rows": {"headers": HEADERS, "data": "rows"},
}
WRONG_ORDER = ("train_pause", "train_resume", "train_stop")

# What a student must never read: Python and Gradio internals.
INTERNALS = ("Traceback", 'File "', "TypeError", "ValueError", "KeyError", "IndexError", "AttributeError",
             "RuntimeError", "OverflowError", "ValidationError", "Exception", "Could not preprocess", "Overflow",
             "Cannot convert", "cannot convert", "validation error", "pydantic", "<class", " object at 0x",
             "NoneType", "Internal Server Error", "event handler", "unpacking")
LIST_REPR = re.compile(r"\['[\w.]+'(?:, '[\w.]+')*\]")  # ['.zip', '.txt']: a Python list of strings


def assert_human(message) -> None:
    assert isinstance(message, str) and message.strip(), f"no message: {message!r}"
    assert len(message) < 1000, message
    leaked = [word for word in INTERNALS if word in message] + LIST_REPR.findall(message)
    assert not leaked, f"internal text {leaked} in: {message}"


# ---------------------------------------------------------------- calling the app

def predict(c: Client, name: str, args: list):
    """(True, outputs) or (False, error message), in c's session. Uploads go through gradio_client; other
    calls through the same public REST route it documents (/gradio_api/call/<name>), which can also carry
    NaN and infinities and costs the test process far less CPU per call."""
    if any(isinstance(a, dict) and "meta" in a for a in args):
        try:
            return True, c.predict(*args, api_name=f"/{name}")
        except AppError as err:
            return False, str(err)
    return raw_call(c, name, args)


def assert_outcome(ok: bool, result) -> None:
    """A refusal needs a human message; an answer must not carry internals in any text it returns."""
    if not ok:
        assert_human(result)
        return
    texts = [r for r in (result if isinstance(result, (list, tuple)) else [result]) if isinstance(r, str)]
    for text in texts:
        assert not [w for w in INTERNALS if w in text], text[:500]


# ---------------------------------------------------------------- fixtures

RSS_GROWTH_MB = 200  # the server's memory after the whole suite, against before it


@pytest.fixture(scope="module")
def client(app_url) -> Client:
    return Client(app_url, verbose=False)


@pytest.fixture(scope="module", autouse=True)
def rss_before_the_suite(app_url) -> float:
    """The app's resident memory once warm (the first normal calls made), before any bad input."""
    warm = Client(app_url, verbose=False)
    assert_normal_attention(warm)
    return rss_mb(APP_PIDS[app_url])


@pytest.fixture(scope="module")
def api(client) -> dict:
    return client.view_api(return_format="dict", print_info=False)["named_endpoints"]


@pytest.fixture(scope="module")
def trainer(app_url) -> Client:
    """A session that never prepares data: /train_start then checks corpus, tokenizer and BPE size too (a
    session with prepared data trains on that and ignores them)."""
    c = Client(app_url, verbose=False)
    yield c
    try:  # a case that wrongly started a run has failed already; do not leave the run going
        c.predict(api_name="/train_stop")
    except AppError:
        pass


@pytest.fixture(scope="module")
def train_defaults(api) -> dict:
    params = api["/train_start"]["parameters"]
    assert len(params) == len(TRAIN_FIELDS), [p["label"] for p in params]
    return {name: p["parameter_default"] for name, p in zip(TRAIN_FIELDS, params)}


CALLS = {"n": 0}


@pytest.fixture
def still_answers(client):
    """After the case: the same session answers a cheap normal call; every 8th case, /attention on "ROMEO:"
    must return its figure (a full model run), so a broken model or session cannot hide for long."""
    yield
    CALLS["n"] += 1
    ok, outputs = raw_call(client, "train_status", [])
    assert ok and ("training" in outputs[1].lower() or "step" in outputs[1]), outputs
    if CALLS["n"] % 8 == 0:
        assert_normal_attention(client)


def assert_normal_attention(c: Client) -> None:
    grid = c.predict(*NORMAL["attention"], api_name="/attention")[0]
    assert json.loads(grid)["data"]  # the grid is a live chart: its value is the figure JSON


def with_value(name: str, index: int, value) -> list:
    args = list(NORMAL[name])
    args[index] = value
    return args


# ---------------------------------------------------------------- the API's shape

def test_every_numeric_parameter_is_covered(api):
    """NUMERIC lists exactly the numeric parameters each endpoint declares, so a new one needs new cases."""
    for name, positions in NUMERIC.items():
        params = api[f"/{name}"]["parameters"]
        numeric = {i for i, p in enumerate(params) if p["python_type"]["type"] in ("float", "int")}
        assert numeric == set(positions), (name, [p["label"] for p in params])
        assert len(params) == len(NORMAL[name])
    declared = {n for n, p in zip(TRAIN_FIELDS, api["/train_start"]["parameters"])
                if p["python_type"]["type"] in ("float", "int")}
    assert declared == set(TRAIN_NUMERIC)


def test_the_normal_calls_work(client):
    for name, args in NORMAL.items():
        ok, result = predict(client, name, args)
        assert ok, (name, result)


# ---------------------------------------------------------------- numbers

@pytest.mark.parametrize("value", BAD_NUMBERS.values(), ids=BAD_NUMBERS.keys())
@pytest.mark.parametrize("name, index", [(n, i) for n, ps in NUMERIC.items() for i in ps],
                         ids=[f"{n}-{p}" for n, ps in NUMERIC.items() for p in ps.values()])
def test_bad_number(client, still_answers, name, index, value):
    assert_outcome(*predict(client, name, with_value(name, index, value)))


TRAIN_CASES = {f"{f}-{k}": (f, v) for f in TRAIN_NUMERIC for k, v in BAD_NUMBERS.items()
               if (f, k) != ("bpe_vocab", "none")}  # an empty BPE size means the default


@pytest.mark.parametrize("field, value", TRAIN_CASES.values(), ids=TRAIN_CASES.keys())
def test_bad_training_number_is_refused(trainer, still_answers, train_defaults, field, value):
    values = {**train_defaults, "corpus": "first-names", field: value}
    ok, result = predict(trainer, "train_start", [values[f] for f in TRAIN_FIELDS])
    assert not ok, f"a run started with {field}={value!r}: {result}"
    assert_human(result)


@pytest.mark.parametrize("overrides, message", [
    (dict(n_layers=2.5), "whole number"),
    (dict(d_model=30, n_heads=4), "divisible"),
    (dict(lr=10), "Learning rate must be between"),
    (dict(lr=0), "Learning rate must be between"),
    (dict(weight_decay=math.inf), "finite"),
    (dict(batch_size=0), "Batch size must be between"),
    (dict(block_size=1), "Block size must be between"),
    (dict(max_steps=10**9), "more than this server allows"),
    (dict(dropout=0.99), "Dropout must be between"),
    (dict(activation="sigmoid"), "must be one of gelu"),
    (dict(tie_weights="yes"), "must be true or false"),
], ids=lambda v: str(v)[:40])
def test_bad_training_setting_names_the_problem(trainer, still_answers, train_defaults, overrides, message):
    values = {**train_defaults, "corpus": "first-names", **overrides}
    ok, result = predict(trainer, "train_start", [values[f] for f in TRAIN_FIELDS])
    assert not ok and message in result, result
    assert_human(result)


@pytest.mark.parametrize("overrides, message", [
    (dict(d_model=30, n_heads=4), "divisible"), (dict(n_layers=math.nan), "Layers"),
    (dict(d_model=512, n_layers=8, block_size=256), "keeps models of at most"), (dict(val_split="half"), "one of"),
], ids=lambda v: str(v)[:40])
def test_bad_untrained_model_setting_names_the_problem(trainer, still_answers, train_defaults, overrides, message):
    values = {**train_defaults, "corpus": "first-names", **overrides}
    fields = ("corpus", "kind", "bpe_vocab", *ARCH_FIELDS, "val_split")
    ok, result = predict(trainer, "init_model", [values[f] for f in fields])
    assert not ok and message in result, result
    assert_human(result)


# ---------------------------------------------------------------- prompts, choices, tables

@pytest.mark.parametrize("prompt", BAD_PROMPTS.values(), ids=BAD_PROMPTS.keys())
@pytest.mark.parametrize("name", PROMPTED)
def test_bad_prompt(client, still_answers, name, prompt):
    assert_outcome(*predict(client, name, with_value(name, 0, prompt)))


def test_an_empty_or_huge_prompt_is_refused_with_what_to_do(client):
    assert predict(client, "attention", with_value("attention", 0, "")) == (
        False, "Type a prompt first (a few words or characters).")
    ok, message = predict(client, "attention", with_value("attention", 0, BAD_PROMPTS["huge"]))
    assert not ok and "paste at most" in message


@pytest.mark.parametrize("name, index, value", [(n, i, v) for (n, i), vs in BAD_CHOICES.items() for v in vs],
                         ids=lambda v: repr(v)[:20])
def test_bad_choice(client, still_answers, name, index, value):
    ok, result = predict(client, name, with_value(name, index, value))
    assert not ok, result
    assert_human(result)


@pytest.mark.parametrize("table", BAD_TABLES.values(), ids=BAD_TABLES.keys())
def test_bad_compare_table(client, still_answers, table):
    ok, result = predict(client, "compare", with_value("compare", 1, table))
    assert not ok, result
    assert_human(result)


@pytest.mark.parametrize("overrides, message", [
    (dict(kind="letters"), "Tokenizer: choose one of char, word, bpe"),
    (dict(corpus="my diary"), "Pick a corpus"),
    (dict(corpus=["first-names"]), "Pick a corpus"),
    (dict(kind="bpe", bpe_vocab=10), "BPE vocabulary size must be between"),
], ids=lambda v: str(v)[:40])
def test_bad_training_data_choice(app_url, train_defaults, overrides, message):
    """In a new session: one that has prepared data trains on that and ignores these three fields."""
    c = Client(app_url, verbose=False)
    ok, result = predict(c, "train_start", [{**train_defaults, **overrides}[f] for f in TRAIN_FIELDS])
    assert not ok and message in result, result
    assert_human(result)


def test_a_short_table_row_is_completed_with_defaults(client):
    ok, (html,) = predict(client, "compare", with_value("compare", 1, {"headers": HEADERS, "data": [[0.0]]}))
    assert ok and html.count("class='te-col'") == 1 and "T=0 · top-k off · top-p 1 · min-p 0" in html


# ---------------------------------------------------------------- uploads

def tiny_checkpoint_files() -> dict:
    """The members of a real, tiny checkpoint zip (built here: a few thousand parameters)."""
    from model_core import GPT, GPTConfig
    from model_core.checkpoints.checkpoint import Checkpoint, checkpoint_files
    from model_core.data.tokenization import build_tokenizer

    tok = build_tokenizer("char", "ROMEO: first citizen, hear me speak.")
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, d_model=16, n_heads=2, n_layers=1))
    files = checkpoint_files(Checkpoint(model.eval(), tok))
    assert b'"dropout": 0.0' in files["config.json"]  # the "nan dropout" case below edits this text
    return files


def zip_bytes(files: dict, compression=zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def with_config(files: dict, **model_config) -> dict:
    config = json.loads(files["config.json"])
    config["model_config"].update(model_config)
    return {**files, "config.json": json.dumps(config)}


def bad_zips(files: dict) -> dict:
    """name -> bytes of a .zip upload that must be refused."""
    bomb = zip_bytes({"config.json": b"{" + b" " * 64_000_000 + b"}"}, zipfile.ZIP_DEFLATED)  # 64 MB in ~60 kB
    return {
        "empty": b"", "binary": bytes(range(256)) * 64, "text": b"my notes, not a model\n",
        "oversized": b"PK\x03\x04" + b"\0" * 20_500_000,  # over the 20 MB limit, under Gradio's 20 MiB
        "traversal": zip_bytes({**files, "../../escape.txt": b"x"}),
        "absolute path": zip_bytes({**files, "/tmp/escape.txt": b"x"}),
        "bomb": bomb,
        "many members": zip_bytes({f"f{i}.txt": b"" for i in range(20_000)}),
        "no weights": zip_bytes({"config.json": files["config.json"]}),
        "no config": zip_bytes({k: v for k, v in files.items() if k != "config.json"}),
        "config not json": zip_bytes({**files, "config.json": b"{not json"}),
        "config a list": zip_bytes({**files, "config.json": b"[1, 2]"}),
        "config nested deep": zip_bytes({**files, "config.json": b"[" * 100_000 + b"]" * 100_000}),
        "garbage weights": zip_bytes({**files, "model.safetensors": b"\x08\0\0\0\0\0\0\0{}garbage"}),
        "absurd size": zip_bytes(with_config(files, n_layers=96, d_model=8192, n_heads=64)),
        "absurd block": zip_bytes(with_config(files, block_size=4096)),
        "absurd vocab": zip_bytes(with_config(files, vocab_size=10**7)),
        "huge int": zip_bytes(with_config(files, n_layers=2**70)),
        "negative": zip_bytes(with_config(files, d_model=-16)),
        "fractional": zip_bytes(with_config(files, n_layers=1.5)),
        "string sizes": zip_bytes(with_config(files, d_model="sixteen", n_heads="2")),
        "null sizes": zip_bytes(with_config(files, block_size=None)),
        "list sizes": zip_bytes(with_config(files, n_layers=[1])),
        "bool sizes": zip_bytes(with_config(files, n_heads=True)),
        "nan dropout": zip_bytes({**files, "config.json": files["config.json"].replace(
            b'"dropout": 0.0', b'"dropout": NaN')}),
        "unknown activation": zip_bytes(with_config(files, activation="sigmoid")),
        "mismatched weights": zip_bytes(with_config(files, d_model=32)),
    }


BAD_ZIP_NAMES = ("empty", "binary", "text", "oversized", "traversal", "absolute path", "bomb", "many members",
                 "no weights", "no config", "config not json", "config a list", "config nested deep",
                 "garbage weights", "absurd size", "absurd block", "absurd vocab", "huge int", "negative",
                 "fractional", "string sizes", "null sizes", "list sizes", "bool sizes", "nan dropout",
                 "unknown activation", "mismatched weights")


@pytest.fixture(scope="module")
def zip_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("zips")
    for name, data in bad_zips(tiny_checkpoint_files()).items():
        (folder / f"{name.replace(' ', '-')}.zip").write_bytes(data)
    return folder


@pytest.mark.parametrize("name", BAD_ZIP_NAMES)
def test_bad_checkpoint_upload_is_refused(client, still_answers, zip_dir, name):
    ok, result = predict(client, "load_model", [handle_file(str(zip_dir / f"{name.replace(' ', '-')}.zip"))])
    assert not ok, f"{name} was loaded: {result}"
    assert_human(result)
    assert str(zip_dir) not in result  # the user's file name, not the server's temp path


@pytest.mark.parametrize("value", ["abc", 12, {"path": "/etc/passwd"}, ["x.zip"], True],
                         ids=["text", "number", "bare path", "list", "bool"])
def test_load_model_without_a_file(client, still_answers, value):
    ok, result = predict(client, "load_model", [value])
    assert not ok
    assert_human(result)


def test_load_model_wrong_extension(client, tmp_path):
    path = tmp_path / "model.txt"
    path.write_text("not a zip")
    ok, result = predict(client, "load_model", [handle_file(str(path))])
    assert not ok and "model.txt is not a .zip file" in result
    assert_human(result)


@pytest.mark.parametrize("content", [b"", b" \n\t \n", bytes(range(256)) * 40, b"\xff\xfe\xfa" * 1000, b"hi",
                                     b"a" * 20_500_000],
                         ids=["empty", "blank", "binary", "not utf-8", "too short", "oversized"])
def test_bad_text_upload(client, still_answers, tmp_path, content):
    path = tmp_path / "upload.txt"
    path.write_bytes(content)
    ok, result = predict(client, "data", ["first-names", handle_file(str(path)), "char", 512, "10%"])
    assert not ok, result
    assert_human(result)


@pytest.mark.parametrize("value", ["abc", 7, {"path": "/etc/hostname"}], ids=["text", "number", "bare path"])
def test_data_without_a_file(client, still_answers, value):
    ok, result = predict(client, "data", ["first-names", value, "char", 512, "10%"])
    assert not ok
    assert_human(result)


# ---------------------------------------------------------------- actions in the wrong order

@pytest.fixture(scope="module")
def fresh(app_url) -> Client:
    """A session that has done nothing yet."""
    return Client(app_url, verbose=False)


@pytest.mark.parametrize("name", WRONG_ORDER)
def test_run_control_without_a_run(fresh, name):
    ok, result = predict(fresh, name, [])
    assert (ok, result) == (False, "No training run yet: press Start first.")
    assert_normal_attention(fresh)


def test_status_and_save_before_anything(fresh):
    losses, status, live, _, sample, progress, _ = fresh.predict(api_name="/train_status")
    assert (losses, live, sample, progress) == ("", "", "", "")
    assert status.split("\n\n")[-1].startswith("No training run yet")  # after a refused Stop, its sentence first
    with zipfile.ZipFile(fresh.predict(api_name="/save_model")) as zf:
        assert "config.json" in zf.namelist()


# ---------------------------------------------------------------- raw HTTP

def http_post(url: str, path: str, body: dict):
    conn = _connection(url)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        answer = conn.getresponse()
        return answer.status, answer.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize("path, body", [
    ("/gradio_api/call/no_such_endpoint", {"data": []}),
    ("/gradio_api/call/train_start_now", {"data": [1, 2, 3]}),
    ("/gradio_api/queue/join", {"data": [], "fn_index": 99_999, "session_hash": "bad-input-suite"}),
    ("/gradio_api/queue/join", {"data": [], "fn_index": -1, "session_hash": "bad-input-suite"}),
], ids=["unknown name", "unknown name with data", "fn_index too large", "fn_index negative"])
def test_unknown_function_is_a_readable_4xx(app_url, client, path, body):
    status, text = http_post(app_url, path, body)
    assert 400 <= status < 500, (status, text)
    assert_human(json.loads(text)["detail"])
    assert_normal_attention(client)


def test_too_few_values_get_a_sentence(client):
    """Gradio's own "didn't receive enough input values" lists component objects: the caller reads a sentence
    instead (it was an empty message)."""
    ok, result = raw_call(client, "attention", [PROMPT])
    assert not ok and "takes 5 inputs and got 1" in result, result
    assert_human(result)


SERVER_FILE = {"path": "/etc/hostname", "meta": {"_type": "gradio.FileData"}}  # a path on the server, not uploaded


@pytest.mark.parametrize("name, index", [(n, i) for n in ("attention", "activation_patching", "compare", "data")
                                         for i in range(len(NORMAL[n]))], ids=lambda v: str(v))
def test_a_server_file_as_any_input_gets_a_sentence(client, still_answers, name, index):
    """Gradio refuses a file it did not receive as an upload before our callbacks run; the caller is told so (it
    was an empty message)."""
    ok, result = raw_call(client, name, with_value(name, index, SERVER_FILE))
    assert not ok
    assert_human(result)
    assert "/etc" not in result


def test_a_server_file_as_the_upload_names_what_to_do(client):
    ok, result = raw_call(client, "load_model", [SERVER_FILE])
    assert not ok and "handle_file" in result, result
    assert_human(result)


def test_zz_server_memory_returns_after_the_bad_inputs(app_url, client, rss_before_the_suite):
    """Runs last (pytest keeps file order): bombs, huge configs and huge prompts leave no lasting memory."""
    assert_normal_attention(client)
    after = rss_mb(APP_PIDS[app_url])
    assert after - rss_before_the_suite <= RSS_GROWTH_MB, (rss_before_the_suite, after)
