"""Strict JSON for checkpoint files, and type checks of every field before a config class sees it.

The config classes validate values; these checks come first and catch what JSON lets through: "4" (text)
where a number goes, 2.5 layers, true as a layer count, NaN and Infinity, 40-digit numbers, lists where
objects go. Every error is a ValueError whose message names the field and says how to fix it."""
import json
import math
import typing
from typing import Optional

from model_core.data.chat import MAX_TEMPLATE_CHARS

MAX_INT_DIGITS = 19  # 2^63 has 19 digits; anything longer is no count, size or seed this app uses
MAX_TEXT_CHARS = 100_000  # a probe text or corpus description
MAX_METRIC_KEYS = 32  # fields in one history or evals row


def size_text(n: int) -> str:
    """A byte count for people: '2.0 kB', '20.0 MB'."""
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


class NotANumber:
    """What the parser puts where JSON holds NaN, Infinity, 1e999 or a 40-digit integer, so that the
    refusal can name the field it sits in (the parser's hooks cannot know it)."""

    def __init__(self, text: str, why: str):
        self.text, self.why = text, why


def strict_json(data: bytes, name: str, max_bytes: int):
    """Parse JSON refusing NaN, Infinity, 1e999, over-long integers and non-UTF-8 bytes, naming where they are."""
    if len(data) > max_bytes:
        raise ValueError(f"{name} is {size_text(len(data))}, more than the {size_text(max_bytes)} limit; "
                         "it is not one this app wrote.")
    found = []  # NotANumber markers the hooks made

    def marker(text: str, why: str) -> NotANumber:
        found.append(NotANumber(text, why))
        return found[-1]

    try:
        tree = json.loads(
            data.decode("utf-8"),
            parse_constant=lambda word: marker(word, "not a number"),
            parse_float=lambda text: float(text) if math.isfinite(float(text)) else marker(text, "too large"),
            parse_int=lambda text: int(text) if len(text.lstrip("-")) <= MAX_INT_DIGITS else marker(
                f"a {len(text.lstrip('-'))}-digit number", "far too large for any setting"))
    except UnicodeDecodeError:
        raise ValueError(f"{name} is not UTF-8 text; the file is damaged: save the model again.") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{name} is not valid JSON ({err.msg} at line {err.lineno}); the file is damaged: "
                         "save the model again.") from None
    except RecursionError:
        raise ValueError(f"{name} nests lists or objects too deeply; it is not one this app wrote.") from None
    if found:
        where, bad = first_marker(tree)
        raise ValueError(f"{name}{': ' + where if where else ''} holds {bad.text[:40]}, {bad.why}: write an "
                         "ordinary number there, or save the model again.")
    return tree


def first_marker(tree) -> tuple[str, NotANumber]:
    """(path such as 'model_config.dropout', marker) of the first NotANumber in a parsed JSON tree."""
    stack = [((), tree)]  # iterative: the tree may be as deep as the parser allowed
    while stack:
        path, node = stack.pop()
        if isinstance(node, NotANumber):
            return "".join(f"[{p}]" if isinstance(p, int) else f".{p[:40]}" for p in path).lstrip("."), node
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack.extend((path + (key,), child) for key, child in reversed(list(items)))
    raise AssertionError("the parser made a marker that is not in the tree")


def describe(value) -> str:
    """A JSON value as a user would recognise it: '"4" (text)', '2.5 (a fraction)', 'true (yes/no)'."""
    if value is None:
        return "null (nothing)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a yes/no value)"
    if isinstance(value, str):
        return f"{value[:20]!r}{'...' if len(value) > 20 else ''} (text)".replace("'", '"')
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} (not a finite number)"
    if isinstance(value, float):
        return f"{value:g} (a fraction)" if value != int(value) else f"{value:g} (written with a decimal point)"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def check_object(value, path: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{path} must be an object ({{...}}), got {describe(value)}; the file is damaged.")
    return value


def check_list(value, path: str, max_len: int) -> list:
    if not isinstance(value, list):
        raise ValueError(f"{path} must be a list ([...]), got {describe(value)}; the file is damaged.")
    if len(value) > max_len:
        raise ValueError(f"{path} has {len(value):,} entries, more than the limit of {max_len:,}.")
    return value


def check_int(value, path: str, minimum: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{path} must be a whole number such as 4, got {describe(value)}: "
                         "write it without quotes or a decimal point.")
    if abs(value) >= 2 ** 63:
        raise ValueError(f"{path} is {value:,}, far too large: fix the value or save the model again.")
    if minimum is not None and value < minimum:
        raise ValueError(f"{path} must be at least {minimum}, got {value:,}.")
    return value


def check_number(value, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{path} must be a number such as 0.01, got {describe(value)}.")
    return value


def check_text(value, path: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{path} must be text in quotes, got {describe(value)}.")
    if len(value) > max_chars:
        raise ValueError(f"{path} is {len(value):,} characters long, more than the limit of {max_chars:,}.")
    return value


def check_bool(value, path: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{path} must be true or false, got {describe(value)}.")
    return value


def check_dataclass_fields(d: dict, cls, path: str) -> dict:
    """Type-check each known field of d against cls's annotations (unknown keys are left to cls.from_dict)."""
    check_object(d, path)
    hints = typing.get_type_hints(cls)
    for name, value in d.items():
        if name in hints:
            check_typed(value, hints[name], f"{path}.{name}")
    return d


def check_typed(value, hint, path: str) -> None:
    """One value against a type annotation: int, float, bool, str, tuple, Optional[...]; others pass."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Union and type(None) in args:
        if value is not None:
            check_typed(value, next(a for a in args if a is not type(None)), path)
        return
    checks = {int: check_int, float: check_number, bool: check_bool, str: check_text}
    if hint in checks:
        checks[hint](value, path)
    elif hint is tuple or typing.get_origin(hint) is tuple:
        for i, item in enumerate(check_list(value, path, max_len=16)):
            check_number(item, f"{path}[{i}]")
    elif hint is list:
        check_list(value, path, max_len=MAX_TEXT_CHARS)
    elif hint is dict:
        check_object(value, path)


def check_metric_rows(rows, path: str, max_rows: int) -> list:
    """history / evals: a list of flat {name: finite number or null} rows."""
    for i, row in enumerate(check_list(rows, path, max_rows)):
        check_object(row, f"{path}[{i}]")
        if len(row) > MAX_METRIC_KEYS:
            raise ValueError(f"{path}[{i}] has {len(row)} fields, more than {MAX_METRIC_KEYS}; the file is damaged.")
        for key, value in row.items():
            if value is not None:
                check_number(value, f"{path}[{i}].{key[:40]}")
    return rows


def check_tokenizer(d, max_vocab: int) -> Optional[dict]:
    """The saved tokenizer's shape: {kind: char, chars: [...]}, {kind: word, words: [...]} or {kind: bpe, ...}."""
    if d is None:
        return None
    check_object(d, "tokenizer")
    kind = d.get("kind")
    if kind == "bpe":
        check_text(d.get("tokenizer_json"), "tokenizer.tokenizer_json", max_chars=64_000_000)
        if d.get("chat_template") is not None:
            check_text(d["chat_template"], "tokenizer.chat_template", max_chars=MAX_TEMPLATE_CHARS)
        return d
    if kind not in ("char", "word"):
        raise ValueError(f"tokenizer.kind must be \"char\", \"word\" or \"bpe\", got {describe(kind)}.")
    key = "chars" if kind == "char" else "words"
    items = check_list(d.get(key), f"tokenizer.{key}", max_vocab)
    for i, item in enumerate(items):
        check_text(item, f"tokenizer.{key}[{i}]", max_chars=1 if kind == "char" else 1_000)
        if not item:
            raise ValueError(f"tokenizer.{key}[{i}] is empty; every token needs at least one character.")
    if len(set(items)) != len(items):
        raise ValueError(f"tokenizer.{key} lists a token twice, so ids would be ambiguous; the file is damaged.")
    return d
