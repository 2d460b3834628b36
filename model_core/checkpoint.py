"""Checkpoints: a directory (or one .zip) holding model.safetensors, config.json and snapshots.json.

No pickle anywhere: weights are safetensors, everything else JSON. A tied unembedding is saved once
(as embed.weight) and re-tied by building the model from its config. Loading checks everything and
raises CheckpointError saying what is wrong."""
import io
import json
import os
import shutil
import tempfile
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import torch
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save as save_safetensors_bytes

from .config import GPTConfig
from .model import GPT
from .snapshots import Snapshot
from .tokenization import tokenizer_from_dict
from .train_config import TrainConfig

FORMAT = "transformer-explorer-checkpoint"
FORMAT_VERSION = 1
PROJECT_VERSION = "0.1.0"
WEIGHTS, CONFIG, SNAPSHOTS = "model.safetensors", "config.json", "snapshots.json"
REQUIRED_KEYS = ("format", "format_version", "model_config", "tokenizer")
MAX_ZIP_BYTES = 1 << 30  # uncompressed size cap for an uploaded .zip (zip-bomb guard)


class CheckpointError(ValueError):
    """A checkpoint cannot be saved or loaded; the message says what is wrong and what to do."""


@dataclass
class Checkpoint:
    model: GPT
    tokenizer: object = None  # a tokenizer from model_core.tokenization, or None
    train_config: Optional[TrainConfig] = None
    history: list = field(default_factory=list)  # per-step metrics dicts
    evals: list = field(default_factory=list)  # {step, train_loss, val_loss}
    snapshots: list = field(default_factory=list)  # Snapshot objects
    corpus: Optional[str] = None  # built-in corpus name or a description of the user's text
    versions: dict = field(default_factory=dict)  # filled in on save: torch and project versions

    @classmethod
    def from_trainer(cls, trainer, corpus: Optional[str] = None) -> "Checkpoint":
        return cls(trainer.model, trainer.tokenizer, trainer.cfg, list(trainer.history), list(trainer.evals),
                   list(trainer.snapshots), corpus)


# ---------------------------------------------------------------- saving

def checkpoint_files(ckpt: Checkpoint) -> dict[str, bytes]:
    """The checkpoint as {file name: bytes}."""
    model = ckpt.model
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    if model.cfg.tie_weights:
        tensors.pop("unembed.weight", None)  # same storage as embed.weight; safetensors refuses shared tensors
    config = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model_config": model.cfg.to_dict(),
        "tokenizer": None if ckpt.tokenizer is None else ckpt.tokenizer.to_dict(),
        "train_config": None if ckpt.train_config is None else ckpt.train_config.to_dict(),
        "corpus": ckpt.corpus,
        "versions": {"torch": torch.__version__, "transformer_explorer": PROJECT_VERSION},
        "num_params": model.num_params(),
        "history": ckpt.history,
        "evals": ckpt.evals,
        "snapshots_file": SNAPSHOTS,
    }
    snapshots = [s.to_dict() for s in ckpt.snapshots]
    return {
        WEIGHTS: save_safetensors_bytes(tensors, metadata={"format": "pt"}),
        CONFIG: json.dumps(config, indent=1, allow_nan=False).encode("utf-8"),
        SNAPSHOTS: json.dumps(snapshots, separators=(",", ":"), allow_nan=False).encode("utf-8"),
    }


def save_checkpoint(ckpt: Checkpoint, path: Union[str, Path]) -> Path:
    """Write the checkpoint directory atomically: build it in a temp dir beside path, then swap it in."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise CheckpointError(f"{str(path)!r} exists and is not a directory: choose another output path.")
    files = checkpoint_files(ckpt)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.tmp-"))
    try:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
        if path.exists():
            os.rename(path, old)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return path


def save_checkpoint_zip(ckpt: Checkpoint, path: Union[str, Path]) -> Path:
    """Write the checkpoint as one .zip file, atomically (temp file beside path, then os.replace)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    files = checkpoint_files(ckpt)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.tmp-")
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in files.items():
                zf.writestr(name, data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# ---------------------------------------------------------------- loading

def load_checkpoint(path: Union[str, Path]) -> Checkpoint:
    """Load a checkpoint directory (or a .zip file); the model comes back in eval mode on the CPU."""
    path = Path(path)
    if path.is_file():
        return load_checkpoint_zip(path)
    if not path.is_dir():
        raise CheckpointError(f"no checkpoint at {str(path)!r}: give the directory that holds {CONFIG}.")
    files = {}
    for name in (CONFIG, WEIGHTS, SNAPSHOTS):
        if (path / name).is_file():
            files[name] = (path / name).read_bytes()
    return checkpoint_from_files(files, str(path))


def load_checkpoint_zip(source: Union[str, Path, bytes], max_bytes: int = MAX_ZIP_BYTES) -> Checkpoint:
    """Load a checkpoint saved by save_checkpoint_zip, from a path or the file's bytes."""
    where = "the uploaded file" if isinstance(source, (bytes, bytearray)) else str(source)
    if not isinstance(source, (bytes, bytearray)) and not Path(source).is_file():
        raise CheckpointError(f"no such file: {where!r}; check the path.")
    data = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source
    if not zipfile.is_zipfile(data):
        raise CheckpointError(f"{where} is not a .zip checkpoint: save one with the app's 'Save inspected model as .zip' button (or save_checkpoint_zip) and try again.")
    try:
        with zipfile.ZipFile(data) as zf:
            return checkpoint_from_files(zip_members(zf, max_bytes), where)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as err:
        raise CheckpointError(f"{where} is a damaged zip file ({err}): download or save it again.") from None


def zip_members(zf: zipfile.ZipFile, max_bytes: int) -> dict[str, bytes]:
    """Checkpoint files inside the zip (at its top level or in one folder), size-capped."""
    infos = zf.infolist()
    for info in infos:
        parts = Path(info.filename.replace("\\", "/")).parts
        if info.filename.startswith(("/", "\\")) or ".." in parts or ":" in info.filename:
            raise CheckpointError(f"the zip contains an unsafe path {info.filename!r}; refusing to read it.")
    if sum(info.file_size for info in infos) > max_bytes:
        raise CheckpointError(f"the zip unpacks to more than {max_bytes / 1e6:.0f} MB; refusing to read it.")
    files, total = {}, 0
    for info in infos:
        name = Path(info.filename).name
        if name in (CONFIG, WEIGHTS, SNAPSHOTS) and not info.is_dir():
            with zf.open(info) as f:
                data = f.read(max_bytes - total + 1)  # do not trust the header's size
            total += len(data)
            if total > max_bytes:
                raise CheckpointError(f"the zip unpacks to more than {max_bytes / 1e6:.0f} MB; refusing to read it.")
            files[name] = data
    return files


def checkpoint_from_files(files: dict[str, bytes], where: str) -> Checkpoint:
    """Validate the files of a checkpoint and rebuild it. CheckpointError on anything wrong."""
    for name in (CONFIG, WEIGHTS):
        if name not in files:
            raise CheckpointError(f"{where} has no {name}: it is not a complete checkpoint; save the model again.")
    config = parse_config(files[CONFIG], where)
    model_cfg = rebuild(GPTConfig, config["model_config"], "model_config", where)
    train_cfg = None if config.get("train_config") is None else rebuild(
        TrainConfig, config["train_config"], "train_config", where)
    tokenizer = None
    if config["tokenizer"] is not None:
        try:
            tokenizer = tokenizer_from_dict(config["tokenizer"])
        except ValueError as err:
            raise CheckpointError(f"{where}: {err}") from None
        if tokenizer.vocab_size != model_cfg.vocab_size:
            raise CheckpointError(
                f"{where}: the tokenizer has {tokenizer.vocab_size} tokens but the model expects "
                f"{model_cfg.vocab_size}; the files come from different models."
            )
    model = model_with_weights(model_cfg, files[WEIGHTS], where)
    return Checkpoint(
        model=model, tokenizer=tokenizer, train_config=train_cfg,
        history=list(config.get("history") or []), evals=list(config.get("evals") or []),
        snapshots=parse_snapshots(files.get(SNAPSHOTS), where), corpus=config.get("corpus"),
        versions=dict(config.get("versions") or {}),
    )


def parse_config(data: bytes, where: str) -> dict:
    try:
        config = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{where}: {CONFIG} is not valid JSON ({err}); the file is damaged.") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{where}: {CONFIG} should hold a JSON object; the file is damaged.")
    missing = [k for k in REQUIRED_KEYS if k not in config]
    if missing:
        raise CheckpointError(f"{where}: {CONFIG} lacks {', '.join(missing)}; it was not written by this app.")
    if config["format"] != FORMAT or config["format_version"] > FORMAT_VERSION:
        raise CheckpointError(
            f"{where}: checkpoint format {config['format']!r} v{config['format_version']} is not one this "
            f"version reads ({FORMAT!r} v{FORMAT_VERSION}); update the app."
        )
    return config


def rebuild(cls, d, key: str, where: str):
    """cls.from_dict(d), turning any validation error into a CheckpointError."""
    if not isinstance(d, dict):
        raise CheckpointError(f"{where}: {key} in {CONFIG} should be an object, got {type(d).__name__}.")
    try:
        return cls.from_dict(d)
    except (ValueError, TypeError) as err:
        raise CheckpointError(f"{where}: {key} in {CONFIG} is invalid: {err}") from None


def model_with_weights(cfg: GPTConfig, data: bytes, where: str) -> GPT:
    """A GPT built from cfg with the saved weights; every tensor name and shape must match."""
    try:
        tensors = load_safetensors_bytes(data)
    except Exception as err:  # safetensors raises its own error types for truncated or garbled files
        raise CheckpointError(f"{where}: {WEIGHTS} is damaged or truncated ({err}); save the model again.") from None
    model = GPT(cfg)
    expected = {k: v.shape for k, v in model.state_dict().items()}
    if cfg.tie_weights:
        expected.pop("unembed.weight", None)
    missing, unexpected = sorted(expected.keys() - tensors.keys()), sorted(tensors.keys() - expected.keys())
    if missing or unexpected:
        raise CheckpointError(
            f"{where}: the weights do not fit the saved config (missing {missing[:4]}, unexpected "
            f"{unexpected[:4]}); the files come from different models."
        )
    for name, shape in expected.items():
        if tensors[name].shape != shape:
            raise CheckpointError(
                f"{where}: weight {name} has shape {tuple(tensors[name].shape)} but the config needs "
                f"{tuple(shape)}; the files come from different models."
            )
        if not torch.isfinite(tensors[name]).all():
            raise CheckpointError(f"{where}: weight {name} contains NaN or infinity; the model is unusable.")
    model.load_state_dict(tensors, strict=False)  # a tied unembed.weight follows embed.weight
    return model.eval()


def parse_snapshots(data: Optional[bytes], where: str) -> list[Snapshot]:
    if data is None:
        return []
    try:
        return [Snapshot.from_dict(d) for d in json.loads(data.decode("utf-8"))]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{where}: {SNAPSHOTS} is damaged ({err}); delete it to load the model alone.") from None
