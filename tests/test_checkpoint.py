"""Checkpoints: exact round trips (dir and zip), atomic overwrite, and a clear error for each kind of damage."""
import io
import json
import pickle
import zipfile

import pytest
import torch
from safetensors.torch import load_file

from model_core import GPT, GPTConfig
from model_core.checkpoints.checkpoint import (
    Checkpoint,
    CheckpointError,
    load_checkpoint,
    load_checkpoint_zip,
    save_checkpoint,
    save_checkpoint_zip,
)
from model_core.checkpoints.load_limits import LoadLimits
from model_core.data.dataset import token_tensor, train_val_split
from model_core.data.tokenization import build_tokenizer
from model_core.training.train_config import TrainConfig
from model_core.training.trainer import Trainer

pytestmark = pytest.mark.slow

TEXT = "to be or not to be, that is the question. " * 30


def trained_checkpoint(**model_overrides) -> Checkpoint:
    tok = build_tokenizer("char", TEXT)
    train, val = train_val_split(token_tensor(tok.encode(TEXT)))
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=16, d_model=16, n_heads=2, n_layers=2,
                          **model_overrides))
    cfg = TrainConfig(max_steps=4, batch_size=4, eval_interval=2, eval_iters=1, snapshot_interval=2, device="cpu")
    trainer = Trainer(model, train, val, cfg, tok)
    trainer.run()
    return Checkpoint.from_trainer(trainer, corpus="test")


def logits(model, tokenizer):
    model.eval()
    with torch.no_grad():
        return model(torch.tensor([tokenizer.encode("to be or not")]))[0]


@pytest.mark.parametrize("overrides", [{}, {"tie_weights": False, "positional": "sinusoidal", "norm": "rmsnorm"}])
def test_directory_round_trip_is_exact(tmp_path, overrides):
    ckpt = trained_checkpoint(**overrides)
    save_checkpoint(ckpt, tmp_path / "run")
    back = load_checkpoint(tmp_path / "run")
    assert not back.model.training
    assert torch.equal(logits(back.model, back.tokenizer), logits(ckpt.model, ckpt.tokenizer))
    assert back.model.cfg == ckpt.model.cfg and back.train_config == ckpt.train_config
    assert back.history == ckpt.history and back.evals == ckpt.evals and back.corpus == "test"
    assert [s.step for s in back.snapshots] == [0, 2, 4]
    assert back.versions["torch"] == torch.__version__
    if ckpt.model.cfg.tie_weights:
        assert back.model.unembed.weight is back.model.embed.weight


def test_zip_round_trip_from_path_and_bytes(tmp_path):
    ckpt = trained_checkpoint()
    path = save_checkpoint_zip(ckpt, tmp_path / "model.zip")
    for source in (path, path.read_bytes()):
        back = load_checkpoint_zip(source)
        assert torch.equal(logits(back.model, back.tokenizer), logits(ckpt.model, ckpt.tokenizer))
    assert load_checkpoint(path).corpus == "test"  # load_checkpoint accepts a .zip path too


def test_overwrite_is_atomic_and_leaves_no_temp_files(tmp_path):
    ckpt = trained_checkpoint()
    save_checkpoint(ckpt, tmp_path / "run")
    save_checkpoint(ckpt, tmp_path / "run")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["config.json", "model.safetensors",
                                                                    "snapshots.json"]


def test_saved_files_are_plain_safetensors_and_json(tmp_path):
    """Another program can read a checkpoint with safetensors and json alone: no pickle, every tensor exact."""
    ckpt = trained_checkpoint(tie_weights=False)
    save_checkpoint(ckpt, tmp_path / "run")
    tensors = load_file(tmp_path / "run" / "model.safetensors")
    state = ckpt.model.state_dict()
    assert tensors.keys() == state.keys()
    assert all(torch.equal(tensors[k], state[k]) for k in state)
    config = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))
    assert config["model_config"] == ckpt.model.cfg.to_dict()
    assert len(json.loads((tmp_path / "run" / "snapshots.json").read_text(encoding="utf-8"))) == len(ckpt.snapshots)


class RunsOnUnpickle:
    """A pickle payload that creates a file when unpickled: loading it must never run it."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def test_a_pickle_payload_is_refused_and_never_run(saved, tmp_path):
    marker = tmp_path / "ran"
    (saved / "model.safetensors").write_bytes(pickle.dumps(RunsOnUnpickle(marker)))
    with pytest.raises(CheckpointError, match="damaged or truncated"):
        load_checkpoint(saved)
    torch.save({"x": RunsOnUnpickle(marker)}, saved / "model.safetensors")  # what torch.save would write
    with pytest.raises(CheckpointError, match="damaged or truncated"):
        load_checkpoint(saved)
    assert not marker.exists()


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "run"
    save_checkpoint(trained_checkpoint(), path)
    return path


def edit_config(path, change):
    config = json.loads((path / "config.json").read_text())
    change(config)
    (path / "config.json").write_text(json.dumps(config))


def test_missing_weights(saved):
    (saved / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="no model.safetensors"):
        load_checkpoint(saved)


def test_missing_directory(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_checkpoint(tmp_path / "nope")


def test_bad_json(saved):
    (saved / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        load_checkpoint(saved)


def test_missing_keys(saved):
    edit_config(saved, lambda c: c.pop("model_config"))
    with pytest.raises(CheckpointError, match="lacks model_config"):
        load_checkpoint(saved)


def test_invalid_model_config(saved):
    edit_config(saved, lambda c: c["model_config"].update(n_heads=3))
    with pytest.raises(CheckpointError, match="divisible"):
        load_checkpoint(saved)


def test_shape_mismatch(saved):
    def wider(c):
        c["model_config"].update(d_model=32, d_mlp=128)
    edit_config(saved, wider)
    with pytest.raises(CheckpointError, match="shape"):
        load_checkpoint(saved)


def test_layer_count_mismatch(saved):
    edit_config(saved, lambda c: c["model_config"].update(n_layers=3))
    with pytest.raises(CheckpointError, match="missing"):
        load_checkpoint(saved)


def test_tokenizer_model_mismatch(saved):
    edit_config(saved, lambda c: c["tokenizer"].update(chars=c["tokenizer"]["chars"][:-1]))
    with pytest.raises(CheckpointError, match="tokenizer has"):
        load_checkpoint(saved)


def test_truncated_weights(saved):
    data = (saved / "model.safetensors").read_bytes()
    (saved / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="damaged or truncated"):
        load_checkpoint(saved)


def test_not_a_zip(tmp_path):
    (tmp_path / "x.zip").write_bytes(b"hello, not a zip at all")
    with pytest.raises(CheckpointError, match="not a .zip"):
        load_checkpoint_zip(tmp_path / "x.zip")
    with pytest.raises(CheckpointError, match="not a .zip"):
        load_checkpoint_zip(b"\x00" * 100)


def zip_bytes(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_zip_with_parent_path_is_refused():
    with pytest.raises(CheckpointError, match="unsafe path"):
        load_checkpoint_zip(zip_bytes({"../config.json": "{}", "model.safetensors": b""}))


def test_zip_bomb_is_refused():
    bomb = zip_bytes({"config.json": b" " * 5_000_000, "model.safetensors": b"\x00" * 5_000_000})
    assert len(bomb) < 100_000
    with pytest.raises(CheckpointError, match="more than"):
        load_checkpoint_zip(bomb, LoadLimits(max_bytes=1_000_000))


def test_zip_missing_member(saved):
    data = zip_bytes({"config.json": (saved / "config.json").read_bytes()})
    with pytest.raises(CheckpointError, match="no model.safetensors"):
        load_checkpoint_zip(data)
