"""A checkpoint's training record from a file: snapshots checked field by field, and what the record keeps.

snapshots.json comes from someone else's file as often as from ours, so every field of every snapshot is
checked for its type and its shape against the model before Snapshot.from_dict sees it (a "head_stats": []
would otherwise end in an AttributeError, a probe id past the vocabulary in an IndexError in a later view).
record_bytes says how much memory the tokenizer, history, evaluations and snapshots keep once loaded (Python
keeps a parsed history at ~5x its JSON), which a session's budget counts (LoadLimits.max_record_bytes)."""
import base64
import math
import sys
from typing import Optional

from model_core.checkpoints.fields import check_int, check_list, check_number, check_object, check_text, strict_json
from model_core.data.tokenization import tokenizer_bytes
from model_core.model.config import GPTConfig
from model_core.training.snapshots import Snapshot

SNAPSHOTS = "snapshots.json"
ARRAY_DTYPES = {"uint8": 1, "float16": 2, "float32": 4}
MAX_HEAD_STATS = 32  # statistics per snapshot (this app writes 14)


def parse_snapshots(data: Optional[bytes], cfg: GPTConfig, max_bytes: int, max_snapshots: int) -> list[Snapshot]:
    """snapshots.json as Snapshot objects whose every field fits the model; ValueError naming the first that
    does not."""
    if data is None:
        return []
    items = check_list(strict_json(data, SNAPSHOTS, max_bytes), SNAPSHOTS, max_snapshots)
    snapshots = []
    try:
        for i, d in enumerate(items):
            check_snapshot_fields(d, f"{SNAPSHOTS} entry {i}", cfg)
            snapshots.append(Snapshot.from_dict(d))
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{SNAPSHOTS} is damaged ({str(err)[:200]}); delete it to load the model alone.") from None
    return snapshots


def check_snapshot_fields(d, path: str, cfg: GPTConfig) -> None:
    """Types and shapes of one snapshot's fields, so that Snapshot.from_dict meets only well-formed values."""
    check_object(d, path)
    check_int(d.get("step"), f"{path} step", minimum=0)
    for key in ("train_loss", "val_loss"):
        if d.get(key) is not None:
            check_number(d[key], f"{path} {key}")
    probe = check_list(d.get("probe_ids"), f"{path} probe_ids", cfg.block_size)
    for j, token in enumerate(probe):
        if check_int(token, f"{path} probe_ids[{j}]", minimum=0) >= cfg.vocab_size:
            raise ValueError(f"{path} probe_ids[{j}] is {token:,}, not a token of the model's {cfg.vocab_size:,}")
    T = len(probe)
    check_array(d.get("attention"), f"{path} attention", (cfg.n_layers, cfg.n_heads, T, T), ("uint8",))
    if d.get("embedding_coords") is not None:
        check_array(d["embedding_coords"], f"{path} embedding_coords", (cfg.vocab_size, 2), ("float16", "float32"))
    if d.get("explained_variance") is not None:
        for j, share in enumerate(check_list(d["explained_variance"], f"{path} explained_variance", max_len=2)):
            check_number(share, f"{path} explained_variance[{j}]")
    stats = check_object(d.get("head_stats", {}), f"{path} head_stats")
    if len(stats) > MAX_HEAD_STATS:
        raise ValueError(f"{path} head_stats has {len(stats)} entries, more than {MAX_HEAD_STATS}")
    for name, grid in stats.items():
        check_grid(grid, f"{path} head_stats.{check_text(name, f'{path} head_stats name', 40)}", cfg)


def check_array(d, path: str, shape: tuple, dtypes: tuple) -> None:
    """{dtype, shape, base64} of the given shape and one of dtypes, whose base64 holds exactly its bytes."""
    check_object(d, path)
    dtype = d.get("dtype")
    if dtype not in dtypes:
        raise ValueError(f"{path} dtype must be {' or '.join(dtypes)}, got {str(dtype)[:20]!r}")
    stored = tuple(check_int(n, f"{path} shape", minimum=0) for n in check_list(d.get("shape"), f"{path} shape", 4))
    if stored != shape:
        raise ValueError(f"{path} has shape {stored}, not {shape}")
    text = check_text(d.get("base64"), f"{path} base64", max_chars=10 ** 9)
    if len(text) != 4 * math.ceil(math.prod(shape) * ARRAY_DTYPES[dtype] / 3):
        raise ValueError(f"{path} holds {len(text):,} base64 characters, not the {math.prod(shape):,} values "
                         f"of its shape")
    try:
        base64.b64decode(text[:4], validate=True)
    except ValueError:
        raise ValueError(f"{path} base64 is not base64 text") from None


def check_grid(grid, path: str, cfg: GPTConfig) -> None:
    """A [n_layers][n_heads] list of numbers."""
    for layer, row in enumerate(check_list(grid, path, cfg.n_layers)):
        values = check_list(row, f"{path}[{layer}]", cfg.n_heads)
        if len(values) != cfg.n_heads:
            raise ValueError(f"{path}[{layer}] has {len(values)} numbers, not one per head ({cfg.n_heads})")
        for head, value in enumerate(values):
            check_number(value, f"{path}[{layer}][{head}]")
    if len(grid) != cfg.n_layers:
        raise ValueError(f"{path} has {len(grid)} rows, not one per layer ({cfg.n_layers})")


def rows_bytes(rows: list) -> int:
    """Memory of parsed JSON rows of numbers (history, evals): each dict and its float objects."""
    return sum(sys.getsizeof(row) + 32 * len(row) for row in rows)


def snapshot_bytes(snapshot: Snapshot) -> int:
    arrays = [snapshot.attention, snapshot.embedding_coords, snapshot.explained_variance,
              *snapshot.head_stats.values()]
    return 1_000 + 8 * len(snapshot.probe_ids) + sum(a.nbytes for a in arrays if a is not None)


def record_bytes(tokenizer, history: list, evals: list, snapshots: list) -> int:
    """What a checkpoint keeps in memory besides its weights."""
    return (tokenizer_bytes(tokenizer) + rows_bytes(history) + rows_bytes(evals)
            + sum(snapshot_bytes(s) for s in snapshots))
