"""Turn the project's ValueErrors into readable gr.Error messages; never show a stack trace."""
import functools
import logging

import gradio as gr

log = logging.getLogger("explorer")


class UserError(ValueError):
    """Bad input from the user: the message is shown as is."""


def friendly(fn):
    """Decorator for callbacks: ValueError -> gr.Error(message); anything else -> a short apology + log."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except (ValueError, KeyError) as err:
            raise gr.Error(_message(err), print_exception=False) from None
        except Exception as err:  # noqa: BLE001 - the app must keep serving
            log.exception("callback %s failed", fn.__name__)
            raise gr.Error(f"Something went wrong ({type(err).__name__}: {err}). The app is still running; "
                           "try again or reload the model.", print_exception=False) from None

    return wrapper


def _message(err: BaseException) -> str:
    text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    return text[:1].upper() + text[1:] if text else type(err).__name__
