"""Untrusted uploads are bounded before allocation: checkpoint sizes and types, zip bombs and paths, weights
headers, and text files. Each refusal is a readable message; none builds the model or reads past a cap."""
import base64
import io
import json
import re
import struct
import tracemalloc
import warnings
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import save as save_safetensors

from explorer.callbacks import data, models
from explorer.common import tempfiles
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from model_core import GPT, GPTConfig
from model_core.checkpoints.checkpoint import (
    Checkpoint,
    CheckpointError,
    checkpoint_files,
    load_checkpoint,
    load_checkpoint_zip,
    save_checkpoint,
    save_checkpoint_zip,
)
from model_core.checkpoints.fields import check_int, check_number
from model_core.checkpoints.load_limits import LOCAL_LIMITS, UPLOAD_LIMITS, LoadLimits
from model_core.data.corpora import CorpusError, read_user_file, validate_user_text
from model_core.data.tokenization import build_tokenizer
from model_core.training.snapshots import take_snapshot
from model_core.training.train_config import TrainConfig

TEXT = "to be or not to be, that is the question."
HISTORY = [{"step": 1, "loss": 3.5, "lr": 0.001, "grad_norm": None, "tokens_per_sec": 100.0, "elapsed": 0.1}]


def tiny_checkpoint(seed: int = 0, **overrides) -> Checkpoint:
    tok = build_tokenizer("char", TEXT)
    torch.manual_seed(seed)
    model = GPT(GPTConfig(**{**dict(vocab_size=tok.vocab_size, block_size=8, d_model=8, n_heads=2, n_layers=2),
                             **overrides})).eval()
    return Checkpoint(model, tok, TrainConfig(max_steps=10), list(HISTORY), [{"step": 1, "train_loss": 3.0,
                                                                               "val_loss": None}], corpus="test")


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "run"
    save_checkpoint(tiny_checkpoint(), path)
    return path


@pytest.fixture
def builds(monkeypatch):
    """Device type of every GPT built: a refused checkpoint may build one on 'meta' (shapes only), never for real."""
    devices, original = [], GPT.__init__

    def spy(self, cfg):
        devices.append(torch.empty(0).device.type)
        original(self, cfg)

    monkeypatch.setattr(GPT, "__init__", spy)
    return devices


def raw_config(path) -> dict:
    return json.loads((path / "config.json").read_text(encoding="utf-8"))


def write_config(path, config: dict, raw: dict = None) -> None:
    """Write config.json; raw maps placeholder strings to JSON text json.dumps would never write (1e999, ...)."""
    text = json.dumps(config)
    for placeholder, literal in (raw or {}).items():
        text = text.replace(json.dumps(placeholder), literal)
    (path / "config.json").write_text(text, encoding="utf-8")


def set_field(config: dict, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        config = config[key]
    config[last] = value


def refusal(load) -> str:
    with pytest.raises(CheckpointError) as err:
        load()
    message = str(err.value)
    assert "Traceback" not in message and "<class" not in message and "Error:" not in message, message
    return message


# ---------------------------------------------------------------- sizes, before any allocation

def test_a_config_asking_for_a_trillion_parameters_is_refused_without_allocating(saved, builds):
    limits = LoadLimits(max_vocab_size=10 ** 6, max_d_model=10 ** 6, max_d_mlp=10 ** 7)  # only max_params binds
    config = raw_config(saved)
    config["model_config"].update(vocab_size=10 ** 6, d_model=250_000, d_mlp=1_000_000, n_layers=1, n_heads=1)
    config["tokenizer"] = None
    write_config(saved, config)
    message = refusal(lambda: load_checkpoint(saved, limits))
    assert "1,000," in message and "parameters" in message and "5,000,000" in message
    assert builds and set(builds) == {"meta"}


@pytest.mark.parametrize("field, value, message", [
    ("block_size", 4096, "block_size is 4,096, more than this app's limit of 512"),
    ("vocab_size", 100_000, "vocab_size is 100,000, more than this app's limit of 65,536"),
    ("n_layers", 1000, "n_layers is 1,000"),
    ("n_heads", 128, "n_heads is 128"),
    ("d_model", 10 ** 9, "d_model is 1,000,000,000"),
    ("d_mlp", 10 ** 18, "d_mlp is 1,000,000,000,000,000,000"),
])
def test_sizes_over_a_cap_are_refused_before_any_model_is_built(saved, builds, field, value, message):
    config = raw_config(saved)
    config["model_config"][field] = value
    write_config(saved, config)
    assert message in refusal(lambda: load_checkpoint(saved, UPLOAD_LIMITS))
    assert builds == []  # refused on the numbers alone, not even a meta model


def test_many_heads_over_a_long_context_are_refused_for_their_attention_maps(saved, builds):
    config = raw_config(saved)
    config["model_config"].update(n_layers=24, n_heads=64, d_model=64, block_size=512)
    write_config(saved, config)
    assert "attention maps" in refusal(lambda: load_checkpoint(saved, UPLOAD_LIMITS))
    assert "cpu" not in builds


def test_wide_deep_model_within_every_size_cap_is_refused_on_parameters(saved, builds):
    config = raw_config(saved)
    config["model_config"].update(n_layers=24, n_heads=4, d_model=4096)
    write_config(saved, config)
    message = refusal(lambda: load_checkpoint(saved, UPLOAD_LIMITS))
    assert "parameters, more than this app's limit of 5,000,000" in message
    assert builds and "cpu" not in builds


def test_zip_loader_defaults_to_upload_limits_and_directory_loader_to_local_ones(tmp_path):
    long_context = tiny_checkpoint(block_size=4096, positional="sinusoidal")  # a valid model, over one cap
    assert "block_size" in refusal(lambda: load_checkpoint_zip(zip_of(checkpoint_files(long_context))))
    save_checkpoint(long_context, tmp_path / "run")
    assert load_checkpoint(tmp_path / "run").model.cfg.block_size == 4096  # a file on this machine: generous caps


def test_load_checkpoint_reads_a_zip_with_the_upload_limits_unless_told_otherwise(tmp_path):
    long_context = tiny_checkpoint(block_size=4096, positional="sinusoidal")
    path = save_checkpoint_zip(long_context, tmp_path / "shared.zip")  # a file that travels, given by its path
    assert "block_size is 4,096, more than this app's limit of 512" in refusal(lambda: load_checkpoint(path))
    assert load_checkpoint(path, LOCAL_LIMITS).model.cfg.block_size == 4096  # the caller chose the limits
    missing = refusal(lambda: load_checkpoint(tmp_path / "typo.zip"))
    assert "no such file" in missing and "typo.zip" in missing and "config.json" not in missing


# ---------------------------------------------------------------- every JSON field type-checked

NAN, BIG = "@nan@", "@big@"
RAW = {NAN: "NaN", BIG: "1e999"}


@pytest.mark.parametrize("dotted, value, message", [
    ("model_config.n_layers", "2", r'model_config\.n_layers must be a whole number.*"2" \(text\)'),
    ("model_config.n_layers", 2.5, r"model_config\.n_layers must be a whole number.*2\.5 \(a fraction\)"),
    ("model_config.n_layers", 2.0, r"n_layers must be a whole number.*decimal point"),
    ("model_config.n_layers", True, r"n_layers must be a whole number.*true \(a yes/no value\)"),
    ("model_config.n_layers", None, r"n_layers must be a whole number.*null"),
    ("model_config.n_layers", [2], r"n_layers must be a whole number.*a list"),
    ("model_config.n_layers", 10 ** 30, r"config\.json: model_config\.n_layers holds a 31-digit number, far too large"),
    ("model_config.n_layers", 10 ** 18, r"n_layers is 1,000,000,000,000,000,000, more than this app's limit"),
    ("model_config.n_layers", -1, r"n_layers must be a positive whole number"),
    ("model_config.dropout", "0.1", r"model_config\.dropout must be a number"),
    ("model_config.dropout", NAN, r"config\.json: model_config\.dropout holds NaN, not a number"),
    ("model_config.dropout", BIG, r"model_config\.dropout holds 1e999, too large"),
    ("model_config.tie_weights", 1, r"model_config\.tie_weights must be true or false, got 1"),
    ("model_config.activation", 5, r"model_config\.activation must be text"),
    ("model_config.d_mlp", 2.5, r"model_config\.d_mlp must be a whole number"),
    ("model_config.zzz_unknown", 4, r"unknown model config keys \['zzz_unknown'\]"),
    ("train_config", "fast", r"train_config must be an object"),
    ("train_config.lr", "0.01", r"train_config\.lr must be a number"),
    ("train_config.lr", NAN, r"train_config\.lr holds NaN, not a number"),
    ("train_config.max_steps", 1.5, r"train_config\.max_steps must be a whole number"),
    ("train_config.betas", ["a", 0.9], r"train_config\.betas\[0\] must be a number"),
    ("train_config.betas", 0.9, r"train_config\.betas must be a list"),
    ("train_config.seed", 2 ** 63, r"train_config\.seed is 9,223,372,036,854,775,808, far too large"),
    ("train_config.probe_text", 5, r"train_config\.probe_text must be text"),
    ("format", 7, r"format must be text"),
    ("format_version", "1", r"format_version must be a whole number"),
    ("format_version", 2, r"update the app"),
    ("model_config", [], r"model_config must be an object"),
    ("tokenizer", [], r"tokenizer must be an object"),
    ("tokenizer.kind", "morse", r'tokenizer\.kind must be "char", "word" or "bpe"'),
    ("tokenizer.chars", "abc", r"tokenizer\.chars must be a list"),
    ("tokenizer.chars", [1, 2], r"tokenizer\.chars\[0\] must be text"),
    ("tokenizer.chars", ["ab"], r"tokenizer\.chars\[0\] is 2 characters long"),
    ("tokenizer.chars", ["a", "a"], r"lists a token twice"),
    ("history", "lots", r"history must be a list"),
    ("history", [[1, 2]], r"history\[0\] must be an object"),
    ("history", [{"loss": "low"}], r"history\[0\]\.loss must be a number"),
    ("history", [{"step": 1}, {"loss": NAN}], r"history\[1\]\.loss holds NaN"),
    ("history", [{"loss": {"x": 1}}], r"history\[0\]\.loss must be a number.*an object"),
    ("evals", [{"val_loss": [1.0]}], r"evals\[0\]\.val_loss must be a number"),
    ("corpus", 5, r"corpus must be text"),
    ("versions", {"torch": 2}, r"versions\.torch must be text"),
    ("num_params", "5", r"num_params must be a whole number"),
])
def test_wrong_typed_fields_are_named_with_the_fix(saved, builds, dotted, value, message):
    config = raw_config(saved)
    set_field(config, dotted, value)
    write_config(saved, config, RAW)
    found = refusal(lambda: load_checkpoint(saved, UPLOAD_LIMITS))
    assert found.startswith(str(saved)), found
    assert re.search(message, found), found
    assert "cpu" not in builds


def test_deeply_nested_json_is_refused(saved):
    config = raw_config(saved)
    config["corpus"] = "@deep@"
    write_config(saved, config, {"@deep@": "[" * 100_000 + "]" * 100_000})
    assert "nests lists or objects too deeply" in refusal(lambda: load_checkpoint(saved))


def test_history_longer_than_the_cap_is_refused(saved):
    config = raw_config(saved)
    config["history"] = HISTORY * 11
    write_config(saved, config)
    assert "history has 11 entries, more than the limit of 10" in refusal(
        lambda: load_checkpoint(saved, LoadLimits(max_history_rows=10)))


def test_non_utf8_and_oversized_config_are_refused(saved):
    (saved / "config.json").write_bytes(b'{"format": "\xff\xfe"}')
    assert "config.json is not UTF-8" in refusal(lambda: load_checkpoint(saved))
    (saved / "config.json").write_bytes(b" " * 2_001)
    small = LoadLimits(max_json_bytes=2_000)
    assert "config.json is more than 2.0 kB" in refusal(lambda: load_checkpoint(saved, small))


@pytest.mark.slow
def test_snapshots_that_do_not_fit_the_model_are_refused(saved):
    (saved / "snapshots.json").write_text(json.dumps([{"step": "zero", "probe_ids": [], "attention": {}}]))
    assert "snapshots.json entry 0 step must be a whole number" in refusal(lambda: load_checkpoint(saved))
    snap = take_snapshot(tiny_checkpoint().model, [1, 2, 3], step=0).to_dict()
    snap["attention"]["shape"] = [1, 1, 6, 6]  # the same 36 bytes, the wrong layers and heads
    snap["attention"]["base64"] = base64.b64encode(bytes(36)).decode()
    (saved / "snapshots.json").write_text(json.dumps([snap]))
    assert "entry 0 attention has shape (1, 1, 6, 6), not (2, 2, 3, 3)" in refusal(lambda: load_checkpoint(saved))


# ---------------------------------------------------------------- the weights' header, before the weights

def safetensors_with(header: dict, body: bytes = b"") -> bytes:
    blob = json.dumps(header).encode()
    return struct.pack("<Q", len(blob)) + blob + body


@pytest.mark.slow
def test_a_header_claiming_a_huge_tensor_is_refused_without_reading_it(saved, builds):
    header = {"embed.weight": {"dtype": "F32", "shape": [10 ** 9, 10 ** 3], "data_offsets": [0, 4 * 10 ** 12]}}
    (saved / "model.safetensors").write_bytes(safetensors_with(header, b"\x00" * 64))
    assert "damaged or truncated" in refusal(lambda: load_checkpoint(saved))
    (saved / "model.safetensors").write_bytes(struct.pack("<Q", 2 ** 60) + b"{}")
    assert "its header claims 1,152,921,504,606,846,976 bytes" in refusal(lambda: load_checkpoint(saved))
    assert "cpu" not in builds


def test_header_shape_dtype_and_names_are_checked_against_the_config(saved, builds):
    state = {k: v for k, v in tiny_checkpoint().model.state_dict().items() if k != "unembed.weight"}
    cases = [
        ({**state, "embed.weight": torch.zeros(state["embed.weight"].shape[0], 4)}, "weight embed.weight has shape"),
        ({k: v.to(torch.int32) for k, v in state.items()}, "stored as I32, not as floating-point"),
        ({**state, "extra.weight": torch.zeros(2)}, "unexpected ['extra.weight']"),
        ({k: v for k, v in state.items() if k != "embed.weight"}, "missing ['embed.weight']"),
    ]
    builds.clear()  # the models above were built by the test itself
    for tensors, message in cases:
        (saved / "model.safetensors").write_bytes(save_safetensors(tensors))
        assert message in refusal(lambda: load_checkpoint(saved))
    assert "cpu" not in builds


def test_truncated_weights_are_refused_before_the_model_is_built(saved, builds):
    data = (saved / "model.safetensors").read_bytes()
    (saved / "model.safetensors").write_bytes(data[: len(data) - 100])
    assert "damaged or truncated" in refusal(lambda: load_checkpoint(saved))
    assert "cpu" not in builds


def test_half_precision_weights_load_as_their_float32_values(saved):
    state = {k: v for k, v in tiny_checkpoint().model.state_dict().items() if k != "unembed.weight"}
    (saved / "model.safetensors").write_bytes(save_safetensors({k: v.half() for k, v in state.items()}))
    back = load_checkpoint(saved).model.state_dict()
    assert all(torch.equal(back[k], state[k].half().float()) for k in state)


# ---------------------------------------------------------------- zips

def zip_of(members: dict, compression=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return buffer.getvalue()


def good_files() -> dict:
    return checkpoint_files(tiny_checkpoint())


def lying_bomb(name: str, real_bytes: int, claimed: int) -> bytes:
    """A zip whose one member inflates to real_bytes while its central directory claims `claimed`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf, zf.open(name, "w") as member:
        for _ in range(real_bytes // 1_000_000):
            member.write(b" " * 1_000_000)
    data = bytearray(buffer.getvalue())
    at = data.find(b"PK\x01\x02")
    data[at + 24:at + 28] = struct.pack("<I", claimed)
    return bytes(data)


@pytest.mark.slow
def test_a_member_inflating_past_its_header_is_refused_within_bounded_memory():
    bomb = lying_bomb("config.json", 50_000_000, claimed=100)
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        message = refusal(lambda: load_checkpoint_zip(bomb, LoadLimits(max_bytes=1_000_000)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "damaged" in message or "more than" in message
    assert peak < 10_000_000, f"reading the bomb peaked at {peak / 1e6:.0f} MB"


def test_an_honest_bomb_is_refused_from_its_header_without_reading():
    bomb = zip_of({**good_files(), "model.safetensors": b"\x00" * 30_000_000})
    tracemalloc.start()
    try:
        message = refusal(lambda: load_checkpoint_zip(bomb, LoadLimits(max_bytes=1_000_000)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "model.safetensors in the zip unpacks to more than" in message
    assert peak < 5_000_000


def test_the_total_is_capped_even_when_each_member_fits():
    files = good_files()
    cap = max(len(v) for v in files.values()) + 10
    assert "more than" in refusal(lambda: load_checkpoint_zip(zip_of(files), LoadLimits(max_bytes=cap)))


@pytest.mark.parametrize("name", ["../config.json", "/etc/config.json", "C:\\config.json", "a/../../config.json",
                                  "..\\config.json", "notes/../../../etc/passwd", "bad\x01name.txt"])
def test_unsafe_paths_anywhere_in_the_zip_are_refused(name):
    files = {**good_files(), name: b"{}"}
    assert "unsafe path" in refusal(lambda: load_checkpoint_zip(zip_of(files)))


def test_checkpoint_in_one_folder_loads_and_other_members_are_never_read(monkeypatch):
    files = {f"my-run/{k}": v for k, v in good_files().items()}
    files.update({"my-run/notes.txt": b"hello", "__MACOSX/my-run/._config.json": b"\x00\x05",
                  "my-run/huge.bin": b"\x00" * 5_000_000, "inner.zip": zip_of(good_files())})
    upload = zip_of(files)
    opened, original = [], zipfile.ZipFile.open

    def spy(self, info, *args, **kwargs):
        opened.append(getattr(info, "filename", info))
        return original(self, info, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    ckpt = load_checkpoint_zip(upload, LoadLimits(max_bytes=1_000_000))
    assert ckpt.corpus == "test"
    assert sorted(opened) == ["my-run/config.json", "my-run/model.safetensors", "my-run/snapshots.json"]


@pytest.mark.parametrize("members, message", [
    ([("a/config.json", "config.json"), ("a/model.safetensors", "model.safetensors"),
      ("b/config.json", "config.json")], "two config.json files (a/config.json and b/config.json)"),
    ([("config.json", "config.json"), ("model.safetensors", "model.safetensors"),
      ("config.json", "snapshots.json")], "two config.json files"),
    ([("a/config.json", "config.json"), ("b/model.safetensors", "model.safetensors")], "different folders"),
])
def test_duplicate_or_scattered_members_are_refused(members, message):
    files, buffer = good_files(), io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about a duplicate name, which is the point here
        for name, source in members:
            zf.writestr(name, files[source])
    assert message in refusal(lambda: load_checkpoint_zip(buffer.getvalue()))


def test_deeper_nesting_is_not_a_checkpoint():
    files = {f"a/b/{k}": v for k, v in good_files().items()}
    assert "there is no config.json" in refusal(lambda: load_checkpoint_zip(zip_of(files)))


def test_a_zip_of_thousands_of_entries_is_refused_before_its_directory_is_parsed(monkeypatch):
    upload = zip_of({f"f{i}": b"" for i in range(300)}, zipfile.ZIP_STORED)
    monkeypatch.setattr(zipfile.ZipFile, "__init__", lambda *a, **k: pytest.fail("the directory was parsed"))
    assert "table of contents is too large (300 entries" in refusal(lambda: load_checkpoint_zip(upload))


def test_a_zip64_table_of_contents_is_refused_before_it_is_parsed(monkeypatch):
    data = zip_of(good_files())
    end = data.rfind(b"PK\x05\x06")
    upload = data[:end] + b"PK\x06\x07" + bytes(16) + data[end:]  # a ZIP64 locator: its sizes could be anything
    monkeypatch.setattr(zipfile.ZipFile, "__init__", lambda *a, **k: pytest.fail("the directory was parsed"))
    assert "table of contents is too large (65,535 entries" in refusal(lambda: load_checkpoint_zip(upload))


def test_a_password_protected_member_is_refused():
    data = bytearray(zip_of(good_files()))
    at = data.find(b"PK\x01\x02")  # set the 'encrypted' flag of the first member in the central directory
    data[at + 8] |= 0x1
    assert "password-protected" in refusal(lambda: load_checkpoint_zip(bytes(data)))


# ---------------------------------------------------------------- text uploads

def test_reading_a_text_file_stops_one_byte_past_the_cap(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"a" * 5_000_000)
    tracemalloc.start()
    try:
        with pytest.raises(CorpusError, match="more than the 0.0 MB limit"):
            read_user_file(path, 1_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000
    assert read_user_file(path, 5_000_000) == b"a" * 5_000_000


@pytest.mark.parametrize("payload, message", [
    (b"", "empty"),
    (b" \n\t \r\n   ", "empty"),
    ("\u00a0\u2003\n".encode(), "empty"),  # non-breaking and em spaces are whitespace too
    (b"\x01\x02\x03\x04 some text " * 50, "binary"),
    (b"PK\x03\x04" + bytes(range(1, 256)) * 4, "not UTF-8|binary"),
    ("to be or not to be\n".encode("utf-16") * 5, "UTF-16"),
    (b"\xef\xbb\xbfhi", "at least"),  # the byte-order mark is not counted as text
])
def test_bad_text_is_refused_with_a_reason(payload, message):
    with pytest.raises(CorpusError, match=message):
        validate_user_text(payload, max_bytes=100_000, min_chars=5)


def test_a_utf8_byte_order_mark_is_dropped():
    assert validate_user_text(b"\xef\xbb\xbfhello world", min_chars=5) == "hello world"


def test_text_upload_on_the_data_tab(tmp_path, monkeypatch):
    path = tmp_path / "mine.txt"
    for payload, message in ((b"", "empty"), (b"   \n\n", "empty"), (b"\x00\x01" * 100, "binary"),
                             ("é".encode("latin-1") * 50, "not UTF-8"), (b"too short", "at least 20")):
        path.write_bytes(payload)
        with pytest.raises(ValueError, match=message):
            data.read_upload(str(path))
    path.write_text("the cat sat on the mat. " * 5)
    assert data.read_upload(str(path)).startswith("the cat")
    monkeypatch.setattr(LIMITS, "max_upload_mb", 0.0001)
    with pytest.raises(UserError, match="the limit is"):
        data.read_upload(str(path))
    with pytest.raises(UserError, match="gone"):
        data.read_upload(str(tmp_path / "deleted.txt"))


def test_the_sessions_data_budget_counts_the_vocabulary(tmp_path, monkeypatch):
    path = tmp_path / "words.txt"
    path.write_text(" ".join(f"w{i:06d}" for i in range(20_000)))  # 140 kB: 20,000 distinct words
    monkeypatch.setattr(LIMITS, "session_data_mb", 1.0)
    session = Session(Inspected(tiny_checkpoint(), "mine"))
    choice = data.choose_data(session, "", str(path), "char", 512)  # ~280 kB of ids, a vocabulary of 11
    assert choice.nbytes < 1e6 and session.workspace.data is choice
    with pytest.raises(UserError, match=r"makes \d MB of token ids and vocabulary; a session may keep 1 MB"):
        data.choose_data(session, "", str(path), "word", 512)  # 40 kB of ids, ~3 MB of vocabulary
    assert session.workspace.data is choice


# ---------------------------------------------------------------- the app's upload button

def upload_file(tmp_path, files: dict, name="model.zip"):
    path = tmp_path / name
    path.write_bytes(zip_of(files))
    return str(path)


def test_app_caps_come_from_its_flags(monkeypatch):
    monkeypatch.setattr(LIMITS, "max_params", 1_000)
    monkeypatch.setattr(LIMITS, "max_upload_mb", 2.0)
    limits = models.upload_limits()
    assert limits.max_params == 1_000 and limits.max_bytes == 2_000_000 + 4 * 1_000
    assert limits.max_block_size == UPLOAD_LIMITS.max_block_size


def test_app_upload_over_the_servers_parameter_limit_leaves_the_session_alone(tmp_path, monkeypatch):
    session = Session(Inspected(tiny_checkpoint(seed=1), "mine"))
    model, version = session.inspected.model, session.inspected.version
    path = upload_file(tmp_path, good_files())
    monkeypatch.setattr(LIMITS, "max_params", 100)
    with pytest.raises(UserError, match="parameters, more than this app's limit of 100") as err:
        models.load_zip(session, path)
    assert str(tmp_path) not in str(err.value) and "model.zip" in str(err.value)
    assert session.inspected.model is model and session.inspected.version == version
    monkeypatch.setattr(LIMITS, "max_params", 5_000_000)
    assert "uploaded model.zip" in models.load_zip(session, path)
    assert session.inspected.model is not model and session.inspected.version == version + 1


def test_app_upload_with_a_long_context_is_refused(tmp_path):
    files = checkpoint_files(tiny_checkpoint(block_size=4096, positional="sinusoidal"))
    session = Session(Inspected(tiny_checkpoint(seed=1), "mine"))
    with pytest.raises(UserError, match="block_size is 4,096, more than this app's limit of 512"):
        models.load_zip(session, upload_file(tmp_path, files))
    assert session.inspected.name == "mine"


def test_save_zip_writes_into_the_apps_swept_temp_directory():
    session = Session(Inspected(tiny_checkpoint(), "a/b model"))
    path = models.save_zip(session)
    assert tempfiles.temp_root() in Path(path).parents
    assert load_checkpoint_zip(path).corpus == "test"


def test_non_finite_numbers_are_described_not_crashed_on():
    for value in (float("nan"), float("inf")):
        for check in (check_int, check_number):
            with pytest.raises(ValueError, match="not a finite number"):
                check(value, "model_config.dropout")


# ---------------------------------------------------------------- snapshots field by field, and what a record keeps

def snapshot_of(**changes) -> dict:
    snap = take_snapshot(tiny_checkpoint().model, [1, 2, 3], step=0).to_dict()
    for dotted, value in changes.items():
        set_field(snap, dotted, value)
    return snap


@pytest.mark.slow
@pytest.mark.parametrize("changes, message", [
    ({"head_stats": []}, r"entry 0 head_stats must be an object \(\{\.\.\.\}\), got a list"),
    ({"head_stats": None}, r"head_stats must be an object"),
    ({"head_stats.entropy": "high"}, r"head_stats\.entropy must be a list"),
    ({"head_stats.entropy": [[0.5]]}, r"head_stats\.entropy\[0\] has 1 numbers, not one per head \(2\)"),
    ({"head_stats.entropy": [[0.5, "x"], [0.5, 0.5]]}, r"head_stats\.entropy\[0\]\[1\] must be a number"),
    ({"head_stats.entropy": [[0.5, 0.5]]}, r"head_stats\.entropy has 1 rows, not one per layer \(2\)"),
    ({"probe_ids": [1, 2, 999]}, r"probe_ids\[2\] is 999, not a token of the model's \d+"),
    ({"attention.dtype": "float32"}, r"attention dtype must be uint8"),
    ({"attention.base64": "AAAA"}, r"attention holds 4 base64 characters, not the 36 values of its shape"),
    ({"attention.shape": "2x2"}, r"attention shape must be a list"),
    ({"embedding_coords": {"dtype": "float16", "shape": [3, 2], "base64": "AAAAAAAA"}},
     r"embedding_coords has shape \(3, 2\), not \(\d+, 2\)"),
    ({"embedding_coords": {"dtype": "int64", "shape": [3, 2], "base64": ""}}, r"embedding_coords dtype must be"),
    ({"explained_variance": "most"}, r"explained_variance must be a list"),
    ({"explained_variance": [0.5, 0.3, 0.2]}, r"explained_variance has 3 entries, more than the limit of 2"),
    ({"train_loss": "low"}, r"train_loss must be a number"),
])
def test_every_snapshot_field_is_checked_with_a_sentence(saved, changes, message):
    (saved / "snapshots.json").write_text(json.dumps([snapshot_of(**changes)]))
    found = refusal(lambda: load_checkpoint(saved, UPLOAD_LIMITS))
    assert re.search(message, found), found
    assert "delete it to load the model alone" in found


def test_a_snapshot_written_by_this_app_loads_with_its_arrays(saved):
    snap = snapshot_of()
    (saved / "snapshots.json").write_text(json.dumps([snap]))
    loaded = load_checkpoint(saved, UPLOAD_LIMITS).snapshots[0]
    assert loaded.attention.shape == (2, 2, 3, 3) and set(loaded.head_stats) == set(snap["head_stats"])


def test_a_record_over_the_sessions_budget_is_refused_before_the_model_is_built(saved, builds):
    config = raw_config(saved)
    config["history"] = HISTORY * 2_000
    write_config(saved, config)
    message = refusal(lambda: load_checkpoint(saved, replace(UPLOAD_LIMITS, max_record_bytes=500_000)))
    assert re.search(r"training history and snapshots would take [\d.]+ MB of memory once loaded, more than the "
                     r"0\.5 MB a session may keep", message), message
    assert "cpu" not in builds
    assert len(load_checkpoint(saved, UPLOAD_LIMITS).history) == 2_000  # within the default budget


def test_the_app_counts_a_record_against_the_session_data_budget(monkeypatch):
    monkeypatch.setattr(LIMITS, "session_data_mb", 12.5)
    assert models.upload_limits().max_record_bytes == 12_500_000
