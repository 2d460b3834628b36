"""Checkpoints: a directory (or one .zip) holding model.safetensors, config.json and snapshots.json.

No pickle anywhere: weights are safetensors, everything else JSON. A tied unembedding is saved once
(as embed.weight) and re-tied by building the model from its config. Loading checks everything and
raises CheckpointError saying what is wrong. Every size in an untrusted checkpoint is checked against a
LoadLimits before anything is allocated: the model on the meta device, the weights' header before the weights."""
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

from model_core.checkpoints.fields import (
    check_dataclass_fields,
    check_int,
    check_metric_rows,
    check_object,
    check_text,
    check_tokenizer,
    size_text,
    strict_json,
)
from model_core.checkpoints.load_limits import (
    LOCAL_LIMITS,
    UPLOAD_LIMITS,
    LoadLimits,
    check_model_size,
    check_size_fields,
    expected_tensors,
    model_from_tensors,
)
from model_core.checkpoints.record import SNAPSHOTS, parse_snapshots, record_bytes
from model_core.checkpoints.safe_zip import directory_size, read_members
from model_core.checkpoints.safetensors_header import check_header
from model_core.checkpoints.version import PROJECT_VERSION
from model_core.data.native_errors import refused_by_library
from model_core.data.tokenization import tokenizer_from_dict
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from model_core.training.train_config import TrainConfig

FORMAT = "transformer-explorer-checkpoint"
FORMAT_VERSION = 1
WEIGHTS, CONFIG = "model.safetensors", "config.json"
REQUIRED_KEYS = ("format", "format_version", "model_config", "tokenizer")


class CheckpointError(ValueError):
    """A checkpoint cannot be saved or loaded; the message says what is wrong and what to do."""


@dataclass
class Checkpoint:
    model: GPT
    tokenizer: object = None  # a tokenizer from model_core.data.tokenization, or None
    train_config: Optional[TrainConfig] = None
    history: list = field(default_factory=list)  # per-step metrics dicts
    evals: list = field(default_factory=list)  # {step, train_loss, val_loss}
    snapshots: list = field(default_factory=list)  # Snapshot objects
    corpus: Optional[str] = None  # built-in corpus name or a description of the user's text
    versions: dict = field(default_factory=dict)  # filled in on save: torch and project versions
    prompt: Optional[str] = None  # the prompt the views open on when the app's default is not in its vocabulary

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

def load_checkpoint(path: Union[str, Path], limits: Optional[LoadLimits] = None) -> Checkpoint:
    """Load a checkpoint directory (or a .zip file); the model comes back in eval mode on the CPU.

    By default a directory (this machine's own: a shipped model, a run saved by the command line) is read with
    LOCAL_LIMITS, which only guard against damaged files, and a .zip (a file that travels: an upload, a
    download) with UPLOAD_LIMITS; pass limits to choose."""
    path = Path(path)
    if path.is_file() or (path.suffix.lower() == ".zip" and not path.is_dir()):  # a missing .zip: "no such file"
        return load_checkpoint_zip(path, UPLOAD_LIMITS if limits is None else limits)
    limits = LOCAL_LIMITS if limits is None else limits
    if not path.is_dir():
        raise CheckpointError(f"no checkpoint at {str(path)!r}: give the directory that holds {CONFIG}.")
    files = {}
    for name, cap in member_caps(limits).items():
        if (path / name).is_file():
            with open(path / name, "rb") as f:
                files[name] = f.read(cap + 1)  # a file over its cap is refused below, never read in full
            if len(files[name]) > cap:
                raise CheckpointError(f"{path / name} is more than {size_text(cap)}, the limit for {name}.")
    return checkpoint_from_files(files, str(path), limits)


def load_checkpoint_zip(source: Union[str, Path, bytes], limits: LoadLimits = UPLOAD_LIMITS) -> Checkpoint:
    """Load a checkpoint saved by save_checkpoint_zip, from a path or the file's bytes, within limits."""
    in_memory = isinstance(source, (bytes, bytearray, memoryview))
    where = "the uploaded file" if in_memory else str(source)
    if not in_memory and not Path(source).is_file():
        raise CheckpointError(f"no such file: {where!r}; check the path.")
    with (io.BytesIO(source) if in_memory else open(source, "rb")) as f:
        if directory_size(f) is None:
            raise CheckpointError(
                f"{where} is not a .zip checkpoint: save one with the app's 'Save inspected model as .zip' "
                "button (or save_checkpoint_zip) and try again.")
        try:
            files = read_members(f, (CONFIG, WEIGHTS, SNAPSHOTS), limits.max_bytes, member_caps(limits))
        except ValueError as err:
            raise CheckpointError(f"{where}: {err}") from None
    return checkpoint_from_files(files, where, limits)


def member_caps(limits: LoadLimits) -> dict[str, int]:
    """Largest size of each checkpoint file: the JSON ones are parsed into Python objects, ~10x their size."""
    return {CONFIG: limits.max_json_bytes, WEIGHTS: limits.max_bytes, SNAPSHOTS: limits.max_json_bytes}


def checkpoint_from_files(files: dict[str, bytes], where: str, limits: LoadLimits = UPLOAD_LIMITS) -> Checkpoint:
    """Validate the files of a checkpoint and rebuild it; CheckpointError on anything wrong or over a limit.

    Every check runs before the only allocation that scales with the config: the model and its weights."""
    try:
        for name in (CONFIG, WEIGHTS):
            if name not in files:
                raise ValueError(f"there is no {name}: this is not a complete checkpoint; save the model again.")
        total = sum(len(data) for data in files.values())
        if total > limits.max_bytes:
            raise ValueError(f"the checkpoint files hold {size_text(total)}, more than the "
                             f"{size_text(limits.max_bytes)} limit.")
        config = parse_config(files[CONFIG], limits)
        model_cfg, meta_model = model_config_within(config["model_config"], limits)
        train_cfg = None if config.get("train_config") is None else rebuild(
            TrainConfig, check_dataclass_fields(config["train_config"], TrainConfig, "train_config"), "train_config")
        tokenizer = tokenizer_for(config["tokenizer"], model_cfg, limits)
        check_header(files[WEIGHTS], expected_tensors(meta_model))
        snapshots = parse_snapshots(files.get(SNAPSHOTS), model_cfg, limits.max_json_bytes, limits.max_snapshots)
        history, evals = list(config.get("history") or []), list(config.get("evals") or [])
        check_record_size(record_bytes(tokenizer, history, evals, snapshots), limits)
        model = model_with_weights(model_cfg, files[WEIGHTS], limits)
    except ValueError as err:  # every check above raises ValueError with a message for the user
        raise CheckpointError(f"{where}: {err}") from None
    return Checkpoint(model=model, tokenizer=tokenizer, train_config=train_cfg, history=history, evals=evals,
                      snapshots=snapshots, corpus=config.get("corpus"), versions=dict(config.get("versions") or {}))


def check_record_size(n: int, limits: LoadLimits) -> None:
    """ValueError if the tokenizer, history, evaluations and snapshots would keep more memory than a session may."""
    if limits.max_record_bytes is not None and n > limits.max_record_bytes:
        raise ValueError(f"its tokenizer, training history and snapshots would take {size_text(n)} of memory once "
                         f"loaded, more than the {size_text(limits.max_record_bytes)} a session may keep beside its "
                         "model: save it with a smaller vocabulary or fewer snapshots.")


def parse_config(data: bytes, limits: LoadLimits) -> dict:
    """config.json as a dict whose every top-level field has the right type (model_config is checked apart)."""
    config = check_object(strict_json(data, CONFIG, limits.max_json_bytes), CONFIG)
    missing = [k for k in REQUIRED_KEYS if k not in config]
    if missing:
        raise ValueError(f"{CONFIG} lacks {', '.join(missing)}; it was not written by this app.")
    fmt, version = check_text(config["format"], "format", 200), check_int(config["format_version"], "format_version")
    if fmt != FORMAT or not 1 <= version <= FORMAT_VERSION:
        raise ValueError(f"checkpoint format {fmt[:40]!r} v{version} is not one this version reads "
                         f"({FORMAT!r} v{FORMAT_VERSION}); update the app.")
    check_object(config["model_config"], "model_config")
    check_tokenizer(config["tokenizer"], limits.max_vocab_size)
    check_optional_fields(config, limits)
    return config


def check_optional_fields(config: dict, limits: LoadLimits) -> None:
    """Types of the fields a checkpoint may leave out (or set to null)."""
    checks = {
        "train_config": lambda v: check_object(v, "train_config"),
        "corpus": lambda v: check_text(v, "corpus", 1_000),
        "versions": lambda v: [check_text(x, f"versions.{k[:40]}", 200)
                               for k, x in check_object(v, "versions").items()],
        "num_params": lambda v: check_int(v, "num_params", minimum=0),
        "history": lambda v: check_metric_rows(v, "history", limits.max_history_rows),
        "evals": lambda v: check_metric_rows(v, "evals", limits.max_history_rows),
        "snapshots_file": lambda v: check_text(v, "snapshots_file", 200),
    }
    for key, check in checks.items():
        if config.get(key) is not None:
            check(config[key])


def model_config_within(d: dict, limits: LoadLimits) -> tuple[GPTConfig, GPT]:
    """GPTConfig from a raw dict (types, then size caps, then its own checks) and its model on the meta device,
    whose parameter count is within limits."""
    check_dataclass_fields(d, GPTConfig, "model_config")
    check_size_fields(d, limits)
    cfg = rebuild(GPTConfig, d, "model_config")
    return cfg, check_model_size(cfg, limits)


def rebuild(cls, d: dict, key: str):
    """cls.from_dict(d), its validation errors said as a problem in config.json."""
    try:
        return cls.from_dict(d)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{key} in {CONFIG} is invalid: {err}") from None


def tokenizer_for(d: Optional[dict], cfg: GPTConfig, limits: LoadLimits):
    """The saved tokenizer (shape already checked), which must have the model's vocabulary size."""
    if d is None:
        return None
    tokenizer = tokenizer_from_dict(d, limits.max_vocab_size)
    if tokenizer.vocab_size != cfg.vocab_size:
        raise ValueError(f"the tokenizer has {tokenizer.vocab_size} tokens but the model expects {cfg.vocab_size}; "
                         "the files come from different models.")
    return tokenizer


def model_with_weights(cfg: GPTConfig, data: bytes, limits: LoadLimits) -> GPT:
    """A GPT built from cfg with the saved weights (the header was checked against cfg already)."""
    try:
        tensors = load_safetensors_bytes(bytes(data))
    except BaseException as err:  # noqa: BLE001 - safetensors raises its own types (and may panic) on damaged files
        if not refused_by_library(err):
            raise
        raise ValueError(f"{WEIGHTS} is damaged or truncated ({str(err)[:120]}); save the model again.") from None
    for name, tensor in tensors.items():
        if not torch.isfinite(tensor).all():
            raise ValueError(f"weight {name} contains NaN or infinity; the model is unusable.")
    return model_from_tensors(cfg, tensors, limits)  # the header check made sure every weight is there
