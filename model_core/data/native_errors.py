"""Failures inside native libraries that Python does not count as errors.

A Rust panic in Hugging Face `tokenizers` or `safetensors` (a crafted tokenizer.json can cause one) reaches
Python as pyo3's PanicException, a BaseException like KeyboardInterrupt: `except Exception` lets it through,
and it would end a request's thread or a command. Code that calls a native library on untrusted input catches
BaseException and raises native_failure(...): the same exception for Python's own errors and for the signals
that must end the program, a sentence for the rest."""
import asyncio
from contextlib import contextmanager

PASS_THROUGH = (Exception, KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError)


def is_native_failure(err: BaseException) -> bool:
    """True for a BaseException that is neither an ordinary error nor a request to stop (pyo3's PanicException)."""
    return not isinstance(err, PASS_THROUGH)


def refused_by_library(err: BaseException) -> bool:
    """True when err says a library could not handle its input: an ordinary exception or a native failure (not
    KeyboardInterrupt, SystemExit, GeneratorExit or a cancellation, which must go on)."""
    return isinstance(err, Exception) or is_native_failure(err)


def native_failure(err: BaseException, doing: str, error: type = ValueError) -> BaseException:
    """What to raise for err, caught around a native call while `doing` something: err itself unless
    is_native_failure(err), else error with a sentence naming the failure."""
    if not is_native_failure(err):
        return err
    first_line = str(err).splitlines()[0][:120] if str(err) else "no message"
    return error(f"a native library failed while {doing} ({type(err).__name__}: {first_line}); the file is damaged "
                 "or made to break it, so it was refused")


@contextmanager
def native_call(doing: str, error: type = ValueError):
    """Run the block; a native library's BaseException in it becomes error (see native_failure)."""
    try:
        yield
    except BaseException as err:  # noqa: BLE001 - re-raised unless it is a native failure
        raise native_failure(err, doing, error)
