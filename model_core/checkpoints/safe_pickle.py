"""Read a pickle that may only hold plain data (dicts, lists, tuples, strings, numbers): nanoGPT's meta.pkl.

Unpickling runs code: a pickle may name any importable function (os.system, subprocess.call) and call it
while loading. This unpickler refuses every name (find_class) and every persistent id, so only the opcodes
that build plain containers and values can run; the result is then checked type by type."""
import io
import pickle
from pathlib import Path
from typing import Union

MAX_PICKLE_BYTES = 10_000_000  # a character vocabulary is a few kB; anything near this is not a meta.pkl
PLAIN_TYPES = (dict, list, tuple, str, int, float, bool, type(None))


class UnsafePickleError(ValueError):
    """The pickle holds (or tries to build) something other than plain data; it was not loaded."""


class PlainDataUnpickler(pickle.Unpickler):
    """An Unpickler that cannot import anything."""

    def __init__(self, file, where: str):
        super().__init__(file)
        self.where = where

    def find_class(self, module: str, name: str):
        raise UnsafePickleError(
            f"{self.where} tries to import {module}.{name}; a meta.pkl holds only plain data (dicts, lists, "
            "strings and numbers), so it was refused and nothing in it was run. Do not use a file from a source "
            "you do not trust.")

    def persistent_load(self, pid):
        raise UnsafePickleError(f"{self.where} refers to outside objects (persistent ids); it was refused.")


def load_plain_pickle(source: Union[str, Path, bytes], where: str = "the pickle") -> object:
    """The plain data in a pickle file (or its bytes); UnsafePickleError for anything else, ValueError for a
    file that is no pickle at all."""
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        with open(source, "rb") as f:
            data = f.read(MAX_PICKLE_BYTES + 1)
    if len(data) > MAX_PICKLE_BYTES:
        raise UnsafePickleError(f"{where} is larger than {MAX_PICKLE_BYTES // 1_000_000} MB; a meta.pkl is a few kB.")
    try:
        value = PlainDataUnpickler(io.BytesIO(data), where).load()
    except UnsafePickleError:
        raise
    except Exception as err:  # truncated, not a pickle, unknown opcode, recursion: all "cannot read"
        raise ValueError(f"{where} is not a readable pickle ({type(err).__name__}: {str(err)[:100]}).") from None
    check_plain(value, where)
    return value


def check_plain(value, where: str, depth: int = 0) -> None:
    """UnsafePickleError unless value is made only of PLAIN_TYPES (opcodes can still build sets, bytes...)."""
    if depth > 50:
        raise UnsafePickleError(f"{where} is nested more than 50 levels deep; a meta.pkl is flat.")
    if not isinstance(value, PLAIN_TYPES):
        raise UnsafePickleError(f"{where} holds a {type(value).__name__}; only dicts, lists, tuples, strings and "
                                "numbers are accepted.")
    if isinstance(value, dict):
        for key, item in value.items():
            check_plain(key, where, depth + 1)
            check_plain(item, where, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            check_plain(item, where, depth + 1)
