"""Check a safetensors file's header against the tensors a model needs, before any tensor is read.

The format is an 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}},
then the raw bytes. Reading the header alone tells every tensor's shape, type and size, so a file whose
header claims a huge tensor, or whose bytes stop short, is refused without allocating anything."""
import math

import torch

from model_core.checkpoints.fields import check_int, check_list, check_object, check_text, strict_json

MAX_HEADER_BYTES = 1_000_000  # a 24-layer model's header is ~40 kB
FLOAT_DTYPES = {"F16": 2, "BF16": 2, "F32": 4, "F64": 8}  # load_state_dict casts any of them to the model's
DAMAGED = "model.safetensors is damaged or truncated"


def header_specs(data: bytes) -> dict[str, tuple[str, tuple[int, ...], int, int]]:
    """{name: (dtype, shape, begin, end)} from the header; ValueError if it is malformed or points past the end."""
    if len(data) < 8:
        raise ValueError(f"{DAMAGED} (only {len(data)} bytes): save the model again.")
    n = int.from_bytes(data[:8], "little")
    if n > min(len(data) - 8, MAX_HEADER_BYTES):
        raise ValueError(f"{DAMAGED} (its header claims {n:,} bytes, the file has {len(data) - 8:,}): "
                         "save the model again.")
    header = check_object(strict_json(data[8:8 + n], "the model.safetensors header", MAX_HEADER_BYTES),
                          "the model.safetensors header")
    body = len(data) - 8 - n
    specs = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        check_object(entry, f"tensor {name[:80]}")
        dtype = check_text(entry.get("dtype"), f"tensor {name[:80]} dtype", max_chars=8)
        shape = tuple(check_int(d, f"tensor {name[:80]} shape", minimum=0)
                      for d in check_list(entry.get("shape"), f"tensor {name[:80]} shape", max_len=8))
        offsets = check_list(entry.get("data_offsets"), f"tensor {name[:80]} data_offsets", max_len=2)
        if len(offsets) != 2:
            raise ValueError(f"{DAMAGED} (tensor {name[:80]} has no [begin, end] offsets): save the model again.")
        begin, end = (check_int(o, f"tensor {name[:80]} data_offsets", minimum=0) for o in offsets)
        if not begin <= end <= body:
            raise ValueError(f"{DAMAGED} (tensor {name[:80]} lies outside the file): save the model again.")
        specs[name] = (dtype, shape, begin, end)
    return specs


def check_header(data: bytes, expected: dict[str, tuple[tuple[int, ...], torch.dtype]]) -> None:
    """ValueError unless the header lists exactly the expected tensors, with their shapes, float types and sizes."""
    specs = header_specs(data)
    missing, unexpected = sorted(expected.keys() - specs.keys()), sorted(specs.keys() - expected.keys())
    if missing or unexpected:
        raise ValueError(f"the weights do not fit the saved config (missing {missing[:4]}, unexpected "
                         f"{[u[:80] for u in unexpected[:4]]}); the files come from different models.")
    for name, (shape, _) in expected.items():
        dtype, saved_shape, begin, end = specs[name]
        if saved_shape != shape:
            raise ValueError(f"weight {name} has shape {saved_shape} but the config needs {shape}; "
                             "the files come from different models.")
        if dtype not in FLOAT_DTYPES:
            raise ValueError(f"weight {name} is stored as {dtype}, not as floating-point numbers; "
                             "the file is damaged: save the model again.")
        if end - begin != math.prod(shape) * FLOAT_DTYPES[dtype]:
            raise ValueError(f"{DAMAGED} (weight {name} has {end - begin:,} bytes for shape {shape}): "
                             "save the model again.")
