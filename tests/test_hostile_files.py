"""Crafted files (bench/hostile_files.py: each a few kB) are answered with a sentence, never by allocating what
they ask for: every case is loaded in one child process under a 2 GiB address-space limit (its imports take
~1 GB), where a loader that tried to build a 19 G-parameter model, inflate a 3 GiB record or render an
8 GB string would fail with a MemoryError or a RuntimeError instead of the sentence, and where `tokenizers`
aborting the process would end the child. In-process checks beside it: a GGUF file's weights are not
dequantised before their shapes are checked, and no loader builds a model but through model_from_tensors."""
import re
from pathlib import Path

import pytest
import torch

from bench import hostile_files
from bench.hostile_files import CASES, load_in_child
from model_core.checkpoints.convert_error import ConvertError
from model_core.checkpoints.load_limits import UPLOAD_LIMITS

pytestmark = pytest.mark.slow

EXPECTED = {  # case -> (refused?, what the answer must say)
    "nanogpt_wide": (True, r"d_model is 8,192, more than this app's limit of 4,096"),
    "nanogpt_many_params": (True, r"has 4,832,567,296 parameters, more than this app's limit of 5,000,000"),
    "nanogpt_stride0": (True, r"transformer\.wte\.weight has shape \(65, 1000000000\) but model_args imply \(65, 8\)"),
    "nanogpt_compressed": (True, r"archive/data/0 in it is compressed, which PyTorch never does"),
    "zip_wide": (True, r"parameters, more than this app's limit of 5,000,000"),
    "zip_history": (True, r"training history and snapshots would take [\d.]+ MB of memory once loaded, more than "
                          r"the 48\.0 MB a session may keep"),
    "zip_head_stats_list": (True, r"snapshots\.json entry 0 head_stats must be an object"),
    "zip_tokenizer_panic": (True, r"post-processor uses the special token 'X' without defining it"),
    "zip_tokenizer_precompiled": (True, r"normalizer 'Precompiled' is not one this app reads"),
    "zip_tokenizer_padding": (False, r"loaded; encoded a text to \d+ tokens"),  # its padding is dropped
    "zip_tokenizer_regex": (True, r"TokenizerError: a native library failed while encoding the text with the "
                                  r"model's tokenizer \(PanicException: Onig: .*retry-limit"),
    "zip_chat_loops": (True, r"chat template was stopped: it ran more than 20,000 steps"),
    "zip_chat_bomb": (True, r"it tried to make a text or list of 8,000,000,000 characters"),
    "gguf_wide": (True, r"the model has 19,430,875,136 parameters, more than this app's limit of 200,000,000"),
    "gguf_big_tensor": (True, r"model\.embed_tokens\.weight has shape \(512, 8192\) but config\.json implies \(300, 8\)"),
    "gguf_text_width": (True, r"llama\.embedding_length must be a positive whole number, got '8'"),
    "hf_wide": (True, r"the model has 19,430,875,136 parameters, more than this app's limit of 200,000,000"),
    "text_unique_words": (True, r"more than 65,536 distinct words, and a tokenizer keeps at most 65,536"),
}


def build(name: str, folder: Path) -> None:
    if name == "gguf_big_tensor":
        hostile_files.gguf_big_tensor(folder, rows=512)  # 4.4 MB; its dequantisation is watched in-process below
    else:
        CASES[name](folder)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    for name in CASES:
        build(name, root / name)
    return root


@pytest.fixture(scope="module")
def answers(files) -> dict:
    return load_in_child(list(CASES), files)


def test_every_case_has_an_expectation():
    assert set(EXPECTED) == set(CASES)


def test_the_loading_process_survives_every_case(answers):
    assert answers["returncode"] == 0, answers["stderr_tail"]
    assert set(CASES) <= set(answers), f"cases without an answer: {set(CASES) - set(answers)}"


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_crafted_file_gets_its_sentence_within_the_memory_limit(answers, name):
    refused, pattern = EXPECTED[name]
    found = answers.get(name)
    assert found is not None, answers["stderr_tail"]
    assert found["refused"] == refused, found["answer"]
    assert re.search(pattern, found["answer"]), found["answer"]
    if refused:  # our own error with a sentence: not a MemoryError, a RuntimeError or a native panic
        assert found["answer"].startswith("model_core."), found["answer"]
        assert "Traceback" not in found["answer"]


def test_gguf_weights_are_not_dequantised_before_their_shapes_are_checked(files, monkeypatch):
    import gguf.quants

    from model_core.checkpoints.gguf import load_gguf

    monkeypatch.setattr(gguf.quants, "dequantize", lambda *a, **k: pytest.fail("a weight was dequantised"))
    with pytest.raises(ConvertError, match="has shape"):
        load_gguf(files / "gguf_big_tensor" / "model.gguf")


def test_refused_loads_build_models_on_the_meta_device_only(files, monkeypatch):
    """The in-process twin of the child's limit, for the cases that get as far as a model: only meta models."""
    from explorer.callbacks.models import upload_limits
    from model_core import GPT
    from model_core.checkpoints.checkpoint import CheckpointError, load_checkpoint_zip
    from model_core.checkpoints.nanogpt import convert_nanogpt

    devices, original = [], GPT.__init__

    def spy(self, cfg):
        devices.append(torch.empty(0).device.type)
        original(self, cfg)

    monkeypatch.setattr(GPT, "__init__", spy)
    with pytest.raises(ConvertError, match="parameters"):
        convert_nanogpt(files / "nanogpt_many_params" / "ckpt.pt", files / "nanogpt_many_params" / "meta.pkl",
                        upload_limits())
    with pytest.raises(ConvertError, match="has shape"):
        convert_nanogpt(files / "nanogpt_stride0" / "ckpt.pt", files / "nanogpt_stride0" / "meta.pkl", UPLOAD_LIMITS)
    with pytest.raises(CheckpointError, match="parameters"):
        load_checkpoint_zip(files / "zip_wide" / "model.zip", upload_limits())
    assert devices and set(devices) == {"meta"}


def test_no_loader_builds_a_model_but_through_the_one_place_that_checks_its_size():
    """model_core/checkpoints: a GPT is built only on the meta device (load_limits) or by model_from_tensors."""
    folder = Path(__file__).resolve().parents[1] / "model_core" / "checkpoints"
    for path in folder.glob("*.py"):
        source = path.read_text()
        builds = re.findall(r"\bGPT\(|GPT\.with_weights\(", source)
        if path.name == "load_limits.py":
            assert len(builds) == 2 and 'with torch.device("meta"):\n        model = GPT(cfg)' in source
        else:
            assert not builds, f"{path.name} builds a model without model_from_tensors: {builds}"


def test_load_checkpoint_reads_a_zip_with_the_upload_limits(files):
    from model_core.checkpoints.checkpoint import CheckpointError, load_checkpoint

    with pytest.raises(CheckpointError, match="limit of 5,000,000"):
        load_checkpoint(files / "zip_wide" / "model.zip")  # a directory would be read with LOCAL_LIMITS
