"""Turn the project's own errors into readable gr.Error messages; never send internal exception text."""
import functools
import linecache
import logging
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from model_core.data.native_errors import is_native_failure

if TYPE_CHECKING:
    import gradio as gr
# gradio is imported where it is used: the hub service (explorer.hub.service) reads UserError without loading it

log = logging.getLogger("explorer")

PROJECT_DIRS = tuple(str(Path(__file__).resolve().parents[2] / d) for d in ("explorer", "model_core"))


REFUSED = "Cannot do that"  # a refusal's title (API callers); the page's error toasts all say it (explorer.ui CSS)


class UserError(ValueError):
    """Bad input from the user: the message is shown as is."""


def refusal(sentence: str) -> "gr.Error":
    """The toast of a request refused with a sentence for the user, titled REFUSED (not Gradio's "Error", which
    a student took for a crash; Gradio's page titles a toast by its type, so CSS there writes REFUSED). A sentence
    written for the status line's Markdown loses its ** (a toast showed "press **Stop**")."""
    import gradio as gr

    return gr.Error(sentence.replace("**", ""), title=REFUSED, print_exception=False)  # no Markdown in a toast


def friendly(fn):
    """Decorator for callbacks: our own ValueErrors -> gr.Error(message); anything else (a library's
    ValueError included: "cannot convert float NaN to integer" helps nobody) -> logged with a reference id,
    and the user gets a short apology quoting that id. A native library's failure that Python does not count
    as an error (pyo3's PanicException: a Rust panic in `tokenizers` on a crafted file) gets a sentence too;
    KeyboardInterrupt, SystemExit and GeneratorExit pass through."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import gradio as gr

        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except Exception as err:  # noqa: BLE001 - the app must keep serving
            sentence = user_sentence(err)
            if sentence:
                raise refusal(sentence) from None
            raise gr.Error(apology(fn.__name__), print_exception=False) from None
        except BaseException as err:  # noqa: BLE001 - a native panic; the signals that end the app are re-raised
            if not is_native_failure(err):
                raise
            raise gr.Error(native_apology(fn.__name__, err), print_exception=False) from None

    return wrapper


def user_sentence(err: BaseException) -> str | None:
    """What friendly() tells the user of err when it is written for them (an error this project raised on purpose,
    or a gr.Error), else None (friendly then logs it and apologises)."""
    import gradio as gr

    if isinstance(err, gr.Error):
        return err.message
    return _message(err) if isinstance(err, (ValueError, KeyError)) and _ours(err) else None


def native_apology(where: str, err: BaseException) -> str:
    """Log a native library's failure under a fresh reference id; the sentence the user sees instead."""
    ref = secrets.token_hex(3)
    log.error("%s: a native library failed [ref %s]: %s: %s", where, ref, type(err).__name__, str(err)[:300])
    return (f"A library inside the app failed on this model's files or this input ({type(err).__name__}: "
            f"{str(err).splitlines()[0][:100] if str(err) else 'no message'}), reference {ref}. Nothing was "
            "changed and the app is still running: use another model or input.")


def apology(where: str) -> str:
    """Log the exception being handled under a fresh reference id; the message the user sees instead."""
    ref = secrets.token_hex(3)
    log.exception("%s failed [ref %s]", where, ref)
    return (f"Something went wrong on the server (reference {ref}). The app is still running: try again, or "
            "reload the model. If it keeps happening, tell whoever runs this app the reference.")


def _ours(err: BaseException) -> bool:
    """True for errors this project raises on purpose, whose messages are written for users: its own error
    classes, or a plain ValueError/KeyError from a `raise` statement in its code."""
    if type(err).__module__.split(".")[0] in ("explorer", "model_core"):
        return True
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or not tb.tb_frame.f_code.co_filename.startswith(PROJECT_DIRS):
        return False
    return linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).lstrip().startswith("raise")


def _message(err: BaseException) -> str:
    text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    if not text:
        return "That did not work; check the inputs and try again."
    first = text.split(" ", 1)[0]
    # "the prompt is empty" -> "The prompt…"; names stay as written: "tie_weights …", "notes.zip …"
    return text[:1].upper() + text[1:] if first.isalpha() and first.islower() else text
