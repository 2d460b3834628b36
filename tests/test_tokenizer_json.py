"""A tokenizer.json from a file is checked before `tokenizers` reads it, and a panic inside the library (a Rust
panic arrives as pyo3's PanicException, a BaseException) becomes a sentence wherever it happens: loading,
encoding, or in a callback, whose app goes on serving."""
import copy
import json
import random

import gradio as gr
import pytest
import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from explorer.callbacks import attention
from explorer.common.errors import friendly
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from model_core import GPT, GPTConfig
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.data.native_errors import is_native_failure, native_failure
from model_core.data.tokenization import BPETokenizer, TokenizerError, hf_tokenizer, tokenizer_from_dict
from model_core.data.tokenizer_json import TokenizerFileError, checked_tokenizer_json

FUZZ_ROUNDS = 300
TEXT = "the quick brown fox jumps over the lazy dog 123. aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa! " * 20


@pytest.fixture(scope="module")
def byte_level() -> dict:
    return json.loads(BPETokenizer.train(TEXT, 300).hf.to_str())


def sentencepiece_style() -> str:
    """The parts of a Llama 2 / TinyLlama tokenizer: byte fallback, Prepend/Replace, a BOS template."""
    hf = Tokenizer(models.BPE(vocab={"<unk>": 0, "<s>": 1, "a": 2, "b": 3, "ab": 4, "▁": 5}, merges=[("a", "b")],
                              byte_fallback=True, unk_token="<unk>"))
    hf.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r"\d"), "isolated"),
                                                pre_tokenizers.Digits(individual_digits=True)])
    hf.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                    decoders.Strip(" ", 1, 0)])
    hf.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", 1)])
    return hf.to_str()


def test_the_tokenizers_this_app_reads_pass_unchanged(byte_level):
    for text in (json.dumps(byte_level), sentencepiece_style()):
        checked = checked_tokenizer_json(text, 65_536)
        assert json.loads(checked) == json.loads(text)
        assert Tokenizer.from_str(checked).encode("ab ab 12").ids == Tokenizer.from_str(text).encode("ab ab 12").ids


def with_part(tree: dict, **parts) -> str:
    return json.dumps({**copy.deepcopy(tree), **parts})


REFUSED = {  # what a crafted file changes -> what the refusal says
    "undefined special token": (dict(post_processor={"type": "TemplateProcessing", "single": [
        {"SpecialToken": {"id": "X", "type_id": 0}}], "pair": [], "special_tokens": {}}),
        "uses the special token 'X' without defining it"),
    "precompiled normalizer": (dict(normalizer={"type": "Precompiled", "precompiled_charsmap": "AAAA"}),
                               "normalizer 'Precompiled' is not one this app reads"),
    "unknown decoder": (dict(decoder={"type": "CTC", "pad_token": "a"}), "decoder 'CTC' is not one"),
    "unigram model": (dict(model={"type": "Unigram", "unk_id": 5, "vocab": [["a", 0.0]]}), "reads BPE tokenizers only"),
    "unknown top-level part": (dict(extra={"a": 1}), "a part this app does not read ('extra')"),
    "a huge strip": (dict(decoder={"type": "Strip", "content": " ", "start": 10 ** 12, "stop": 0}),
                     "a short text or a whole number"),
    "a special token id past the vocabulary": (dict(post_processor={"type": "TemplateProcessing", "single": [
        {"SpecialToken": {"id": "X", "type_id": 0}}], "pair": [], "special_tokens": {
            "X": {"id": "X", "ids": [10 ** 9], "tokens": ["X"]}}}), "as many ids (of the vocabulary) as tokens"),
    "a long regex": (dict(pre_tokenizer={"type": "Split", "pattern": {"Regex": "a" * 5000}, "behavior": "Isolated",
                                         "invert": False}), "at most 1,000 characters"),
    "sequences nested too deep": (dict(normalizer=json.loads('{"type": "Sequence", "normalizers": [' * 6
                                                             + '{"type": "NFC"}' + ']}' * 6)), "nested at most 4"),
    "added token ids past the limit": (dict(added_tokens=[{"id": 10 ** 9, "content": "x", "special": True}]),
                                       "an id below 65,536"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_crafted_parts_are_refused_with_a_sentence(byte_level, name):
    change, said = REFUSED[name]
    with pytest.raises(TokenizerFileError, match=said.replace("(", r"\(").replace(")", r"\)")):
        checked_tokenizer_json(with_part(byte_level, **change), 65_536)
    with pytest.raises(TokenizerError, match="damaged or not one this app reads"):
        tokenizer_from_dict({"kind": "bpe", "tokenizer_json": with_part(byte_level, **change)})


def test_too_many_tokens_are_refused_before_the_library_sees_them(byte_level):
    with pytest.raises(TokenizerFileError, match="this app reads at most 100 tokens"):
        checked_tokenizer_json(json.dumps(byte_level), 100)


def test_padding_and_truncation_are_dropped(byte_level):
    """Padding to 10^12 tokens makes the library abort the whole process on encode (tests/test_hostile_files)."""
    crafted = with_part(byte_level, padding={"strategy": {"Fixed": 10 ** 12}, "direction": "Right",
                                             "pad_to_multiple_of": None, "pad_id": 0, "pad_type_id": 0,
                                             "pad_token": "a"},
                        truncation={"direction": "Right", "max_length": 1, "strategy": "LongestFirst", "stride": 0})
    tree = json.loads(checked_tokenizer_json(crafted, 65_536))
    assert tree["padding"] is None and tree["truncation"] is None
    assert len(hf_tokenizer(crafted).encode("the quick brown fox").ids) > 1  # not truncated to one token


def test_the_library_panics_on_what_the_checks_refuse():
    """Why the checks exist: the raw library raises a BaseException that `except Exception` does not catch."""
    crafted = json.dumps({"version": "1.0", "normalizer": {"type": "Precompiled", "precompiled_charsmap": "AAAA"},
                          "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})
    with pytest.raises(BaseException) as err:
        Tokenizer.from_str(crafted)
    assert not isinstance(err.value, Exception) and is_native_failure(err.value)
    failure = native_failure(err.value, "reading the tokenizer", TokenizerError)
    assert isinstance(failure, TokenizerError) and "PanicException" in str(failure)


@pytest.mark.parametrize("signal", [KeyboardInterrupt(), SystemExit(1), GeneratorExit(), ValueError("ours")])
def test_signals_and_ordinary_errors_are_not_native_failures(signal):
    assert not is_native_failure(signal)
    assert native_failure(signal, "anything") is signal


def backtracking_tokenizer(byte_level) -> BPETokenizer:
    """Passes the checks; its Split regex makes Oniguruma give up (a panic) on a run of letters."""
    tree = copy.deepcopy(byte_level)
    tree["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(\\w+\\s?)*$"}, "behavior": "Isolated", "invert": False},
        tree["pre_tokenizer"]]}
    return BPETokenizer(hf_tokenizer(json.dumps(tree)))


def test_a_panic_while_encoding_is_a_tokenizer_error(byte_level):
    tokenizer = backtracking_tokenizer(byte_level)
    assert tokenizer.encode("hi")  # short texts encode
    with pytest.raises(TokenizerError, match="native library failed while encoding.*PanicException"):
        tokenizer.encode("a" * 30 + "!")


def test_a_panic_in_a_callback_is_a_sentence_and_the_session_goes_on(byte_level):
    tokenizer = backtracking_tokenizer(byte_level)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=64, d_model=8, n_heads=2, n_layers=1))
    session = Session(Inspected(Checkpoint(model.eval(), tokenizer), "crafted"))
    with pytest.raises(gr.Error) as err:
        friendly(attention.attention_view)(session, "a" * 30 + "!", 0, 0, -1)
    assert "PanicException" in err.value.message and "Traceback" not in err.value.message
    assert friendly(attention.attention_view)(session, "the fox", 0, 0, -1) is not None


class FakePanic(BaseException):
    """Stands for pyo3's PanicException where the test needs to raise one at a chosen place."""


def test_friendly_turns_a_native_failure_into_a_sentence_and_lets_signals_through(caplog):
    def panics():
        raise FakePanic("called `Option::unwrap()` on a `None` value")

    with pytest.raises(gr.Error) as err:
        friendly(panics)()
    assert "FakePanic" in err.value.message and "still running" in err.value.message
    assert "reference" in err.value.message and "FakePanic" in caplog.text
    for signal in (KeyboardInterrupt, SystemExit, GeneratorExit):
        def stops(signal=signal):
            raise signal()

        with pytest.raises(signal):
            friendly(stops)()


@pytest.mark.slow
def test_random_changes_within_the_checks_never_panic_the_library(byte_level):
    """Fuzz: settings a file may hold, mutated at random within what the checks accept, load and encode without
    a panic (an ordinary error from the library is fine: it becomes a sentence)."""
    rng = random.Random(0)
    base = json.loads(sentencepiece_style())
    values = [None, True, False, "", " ", "▁", "<s>", "a", 0, 1, 3, 999, "Isolated", "Removed", "always", "first",
              "never", {"String": " "}, {"Regex": "\\s+"}, {"Regex": "("}]
    panics = []
    for _ in range(FUZZ_ROUNDS):
        tree = copy.deepcopy(rng.choice([base, byte_level]))
        part = tree[rng.choice(["normalizer", "pre_tokenizer", "decoder", "post_processor"])] or {}
        holders = [part] + [p for key in ("normalizers", "pretokenizers", "decoders") for p in part.get(key, [])]
        holder = rng.choice(holders)
        fields = [k for k in holder if k != "type"] or ["type"]
        holder[rng.choice(fields)] = rng.choice(values)
        try:
            checked = checked_tokenizer_json(json.dumps(tree), 65_536)
        except TokenizerFileError:
            continue
        try:
            tok = Tokenizer.from_str(checked)
            tok.decode(tok.encode("ab ab 12 the fox").ids)
        except Exception:  # noqa: BLE001 - an ordinary refusal by the library is fine
            pass
        except BaseException as err:  # noqa: BLE001 - a panic is the finding
            panics.append((checked[:300], repr(err)[:200]))
    assert not panics, panics[:3]
