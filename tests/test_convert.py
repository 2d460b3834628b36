"""nanoGPT checkpoints -> ours (built from our own model in nanoGPT's key layout), and the restricted unpickler."""
import os
import pickle

import pytest
import torch

from model_core.checkpoints.checkpoint import load_checkpoint
from model_core.checkpoints.convert_error import ConvertError
from model_core.checkpoints.nanogpt import convert_nanogpt, layer_key_map
from model_core.checkpoints.safe_pickle import UnsafePickleError, load_plain_pickle
from model_core.convert import main

from .helpers import tiny_model, tokens

CHARS = list("\n !abcdefgh")  # 11 characters: tiny_model's vocabulary


def nanogpt_state_dict(model, prefix: str = "") -> dict:
    """Our model's weights under nanoGPT's names (nn.Linear layout, lm_head tied to wte, a mask buffer per layer)."""
    ours = model.state_dict()
    names = layer_key_map(model.cfg.n_layers, model.cfg.bias)
    sd = {prefix + theirs: ours[mine].clone() for theirs, mine in names.items()}
    block = model.cfg.block_size
    for i in range(model.cfg.n_layers):  # nanoGPT registers its causal mask as a buffer named attn.bias
        sd[f"{prefix}transformer.h.{i}.attn.bias"] = torch.tril(torch.ones(block, block)).view(1, 1, block, block)
    return sd


def write_run(tmp_path, model, prefix: str = "", meta: bool = True):
    cfg = model.cfg
    model_args = dict(n_layer=cfg.n_layers, n_head=cfg.n_heads, n_embd=cfg.d_model, block_size=cfg.block_size,
                      bias=cfg.bias, vocab_size=cfg.vocab_size, dropout=0.0)
    torch.save({"model": nanogpt_state_dict(model, prefix), "model_args": model_args, "iter_num": 250,
                "best_val_loss": torch.tensor(1.5), "config": {"dataset": "shakespeare_char"}}, tmp_path / "ckpt.pt")
    if meta:
        with open(tmp_path / "meta.pkl", "wb") as f:
            pickle.dump({"vocab_size": len(CHARS), "itos": dict(enumerate(CHARS)),
                         "stoi": {c: i for i, c in enumerate(CHARS)}}, f)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("bias, prefix", [(True, ""), (False, ""), (True, "_orig_mod.")])
def test_converted_model_gives_the_original_logits(tmp_path, bias, prefix):
    original = tiny_model(seed=3, bias=bias)
    (tmp_path / "run").mkdir()
    run = write_run(tmp_path / "run", original, prefix)
    assert main(["nanogpt", str(run), "--out", str(tmp_path / "out")]) == 0
    converted = load_checkpoint(tmp_path / "out")
    idx = tokens(original, T=8, batch=3)
    assert torch.allclose(converted.model(idx)[0], original(idx)[0], atol=1e-5, rtol=0)
    assert converted.tokenizer.chars == CHARS and converted.model.cfg.bias is bias
    assert "step 250" in converted.corpus


@pytest.mark.slow
def test_untied_lm_head_is_kept(tmp_path):
    original = tiny_model(seed=1, tie_weights=False, bias=False)
    write_run(tmp_path, original, prefix="_orig_mod.")  # compiled: the tie is detected after the prefix goes
    converted = convert_nanogpt(tmp_path / "ckpt.pt", tmp_path / "meta.pkl")
    idx = tokens(original)
    assert not converted.model.cfg.tie_weights
    assert torch.allclose(converted.model(idx)[0], original(idx)[0], atol=1e-5, rtol=0)


class RunsShell:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_restricted_unpickler_refuses_a_pickle_that_names_os_system(tmp_path):
    marker = tmp_path / "ran"
    evil = pickle.dumps({"stoi": {}, "itos": RunsShell(marker)})  # dumps only builds bytes; nothing runs here
    with pytest.raises(UnsafePickleError, match=r"tries to import (os|posix)\.system.*nothing in it was run"):
        load_plain_pickle(evil, "meta.pkl")
    assert not marker.exists()


def test_restricted_unpickler_reads_plain_data_and_refuses_other_types():
    plain = {"vocab_size": 3, "itos": {0: "a"}, "x": [1.5, (2, None, True)]}
    assert load_plain_pickle(pickle.dumps(plain)) == plain
    with pytest.raises(UnsafePickleError, match="holds a set"):
        load_plain_pickle(pickle.dumps({"s": {1, 2}}))
    with pytest.raises(ValueError, match="not a readable pickle"):
        load_plain_pickle(b"hello, not a pickle")


def test_malicious_meta_pkl_is_refused_by_the_cli(tmp_path, capsys):
    write_run(tmp_path, tiny_model())
    marker = tmp_path / "ran"
    (tmp_path / "meta.pkl").write_bytes(pickle.dumps(RunsShell(marker)))
    assert main(["nanogpt", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert "tries to import" in capsys.readouterr().err and not marker.exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("contents, message", [
    (b"not a checkpoint at all", "ckpt.pt is not a PyTorch checkpoint"),
    ({"weights": {}}, "is not a nanoGPT checkpoint: nanoGPT saves a dict with 'model_args' and 'model'"),
    (torch.zeros(3), "is not a nanoGPT checkpoint"),
    (RunsShell("/nonexistent/x"), r"holds Python objects other than tensors .* \(it names (os|posix)\.system\)"),
])
def test_a_file_that_is_not_a_nanogpt_checkpoint_gets_one_message(tmp_path, contents, message):
    path = tmp_path / "ckpt.pt"
    if isinstance(contents, bytes):
        path.write_bytes(contents)
    else:
        torch.save(contents, path)
    with pytest.raises(ConvertError, match=message):
        convert_nanogpt(path, None)


def test_weights_that_do_not_match_model_args_are_named(tmp_path):
    write_run(tmp_path, tiny_model())
    ckpt = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    ckpt["model_args"]["n_embd"] = 16
    torch.save(ckpt, tmp_path / "ckpt.pt")
    with pytest.raises(ConvertError, match=r"wte.weight has shape \(11, 8\) but model_args imply \(11, 16\)"):
        convert_nanogpt(tmp_path / "ckpt.pt", tmp_path / "meta.pkl")


def test_missing_or_foreign_meta_pkl(tmp_path):
    write_run(tmp_path, tiny_model(), meta=False)
    with pytest.raises(ConvertError, match="no meta.pkl found"):
        convert_nanogpt(tmp_path / "ckpt.pt", None)
    (tmp_path / "meta.pkl").write_bytes(pickle.dumps({"vocab_size": 50257}))
    with pytest.raises(ConvertError, match="no 'stoi' and 'itos'"):
        convert_nanogpt(tmp_path / "ckpt.pt", tmp_path / "meta.pkl")
    (tmp_path / "meta.pkl").write_bytes(pickle.dumps({"itos": {0: "a", 1: "b"}, "stoi": {"a": 0, "b": 1}}))
    with pytest.raises(ConvertError, match="has 2 characters but the model has 11"):
        convert_nanogpt(tmp_path / "ckpt.pt", tmp_path / "meta.pkl")


def test_cli_without_ckpt(tmp_path, capsys):
    assert main(["nanogpt", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert "no ckpt.pt in" in capsys.readouterr().err


def test_a_model_over_the_upload_limits_is_refused_before_it_is_built(tmp_path):
    from dataclasses import replace

    from model_core.checkpoints.load_limits import UPLOAD_LIMITS

    write_run(tmp_path, tiny_model())
    with pytest.raises(ConvertError, match="more than this app's limit of 100"):
        convert_nanogpt(tmp_path / "ckpt.pt", tmp_path / "meta.pkl", replace(UPLOAD_LIMITS, max_params=100))
