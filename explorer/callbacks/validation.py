"""Raw values from the browser or the API -> checked numbers and choices, or a UserError a student can act on.

Gradio hands a callback whatever the caller sent when the component does not convert it (see
tabs/raw_inputs.py), so NaN, infinity, True, "abc", [1] or 2**70 can all arrive where a slider value is
expected. Every callback turns its inputs into numbers here, so each bad value gets the same kind of message.
"""
import math
from numbers import Integral, Real

from explorer.common.errors import UserError

SEED_MAX = 2**32 - 1  # torch seeds are 64-bit; 32 bits is plenty and reads better in a message

_KINDS = {str: "text", list: "a list", tuple: "a list", dict: "a table or dictionary"}


def number(value, name: str, *, minimum=None, maximum=None, default=None) -> float:
    """value as a finite float within [minimum, maximum]; None or "" -> default (or an error without one)."""
    if value is None or value == "":
        if default is None:
            raise UserError(f"{name} is empty: enter a number.")
        return float(default)
    if isinstance(value, bool) or not isinstance(value, Real):
        raise UserError(f"{name} must be a number, not {_kind(value)}.")
    if math.isnan(value):
        raise UserError(f"{name} must be a number, not NaN (“not a number”).")
    if math.isinf(value):
        raise UserError(f"{name} must be a finite number, not {'minus ' if value < 0 else ''}infinity.")
    _check_range(value, name, minimum, maximum)
    return float(value)


def whole_number(value, name: str, *, minimum=None, maximum=None, default=None) -> int:
    """value as an int within [minimum, maximum]; 3.0 is accepted as 3, 2.5 is refused."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        _check_range(value, name, minimum, maximum)  # exact for huge ints, which float() would round
        return int(value)
    x = number(value, name, minimum=minimum, maximum=maximum, default=default)
    if not x.is_integer():
        raise UserError(f"{name} must be a whole number, got {x:g}.")
    return int(x)


def seed(value, name: str = "Seed") -> int:
    """A random seed: a whole number from 0 to SEED_MAX; empty means 0."""
    return whole_number(value, name, minimum=0, maximum=SEED_MAX, default=0)


def choice(value, name: str, choices) -> str:
    """value if it is one of choices (compared as text), else a message listing them."""
    options = [str(c) for c in choices]
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) in options:
        return str(value)
    got = f" (got {_shown(value)})" if value not in (None, "") else ""
    raise UserError(f"{name}: choose one of {', '.join(options)}{got}.")


def _check_range(value, name: str, minimum, maximum) -> None:
    low = minimum is not None and value < minimum
    high = maximum is not None and value > maximum
    if not (low or high):
        return
    if minimum is not None and maximum is not None:
        raise UserError(f"{name} must be between {_shown(minimum)} and {_shown(maximum)}, got {_shown(value)}.")
    if low:
        raise UserError(f"{name} must be at least {_shown(minimum)}, got {_shown(value)}.")
    raise UserError(f"{name} must be at most {_shown(maximum)}, got {_shown(value)}.")


def _kind(value) -> str:
    """How a student would name the type of a wrong value ("text 'abc'", "true/false", "a list")."""
    if isinstance(value, bool):
        return f"true/false ({str(value).lower()})"
    if isinstance(value, str):
        return f"the text {_shown(value)}"
    return next((word for t, word in _KINDS.items() if isinstance(value, t)), "that kind of value")


def _shown(value) -> str:
    """A short, readable rendering: 1,024 · 1e+30 · 'abc' (cut to 40 characters)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Integral):
        return f"{value:,}" if abs(value) < 10**15 else f"{float(value):.3g}"
    if isinstance(value, Real):
        return f"{value:g}"
    if not isinstance(value, str):
        return _kind(value)  # "a list", not its Python repr
    text = value
    return "“" + (text if len(text) <= 40 else text[:37] + "…") + "”"
