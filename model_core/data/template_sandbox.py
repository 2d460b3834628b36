"""A Jinja sandbox with a budget, for chat templates that come from someone else's model files.

Jinja's own sandbox keeps a template away from Python's internals, not from the server's CPU and memory: two
nested loops over range(100000) run for minutes, {{ 'x' * 8000000000 }} allocates 8 GB before anything can
look at the result. Here every rendering has a Budget, spent where a cost arises and before it arises:
- steps: each line of the compiled template that runs (a trace function on the rendering thread counts the
  template's lines only), each filter or method call and each item a filter iterates in Python; loops,
  macros calling macros and recursive loops end after MAX_STEPS, whatever they iterate over;
- characters: each string or list the template makes (its output, constant text included, ~, +, *, slices,
  filters, methods) is sized before it is made: at most MAX_VALUE_CHARS each and MAX_MADE_CHARS together.
  A value turned into text is sized by walking it first (ten copies of a list of ten copies of ... is
  10^k characters of text from a few hundred of template);
- only the filters and methods whose cost can be sized run; the others are refused by name.
Over budget, TemplateBudgetError says what the template tried; model_core.data.chat makes it a sentence."""
import functools
import operator
import sys
import threading
from collections.abc import ItemsView, KeysView, Sized, ValuesView

from jinja2 import filters as jinja_filters
from jinja2 import nodes, pass_environment, pass_eval_context
from jinja2.compiler import CodeGenerator
from jinja2.exceptions import TemplateRuntimeError
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment, safe_range
from jinja2.utils import Namespace

MAX_STEPS = 20_000  # ChatML's template takes 21 steps for one message; Llama 3.1's with tools a few hundred
MAX_VALUE_CHARS = 100_000  # characters (or items) in any one string or list a template makes
MAX_MADE_CHARS = 2_000_000  # characters and items made in one rendering, all values together
MAX_INT_BITS = 4_096  # an integer a template computes (10**10**9 would take minutes and gigabytes)
MAX_INDENT = 100  # tojson's and indent's indentation
TEMPLATE_FILE = "<template>"  # the file name Jinja compiles a template from a string under

# str, list and dict methods a template may call (format and the padding methods, such as center and zfill,
# whose cost an argument sets, are not here); those in MAKING make a value no larger than the string
MAKING = frozenset({"strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "lower", "upper", "title",
                    "capitalize", "casefold", "swapcase", "partition", "rpartition", "removeprefix",
                    "removesuffix"})
SAFE_METHODS = MAKING | {"replace", "join", "startswith", "endswith", "find", "rfind", "index", "rindex", "count",
                         "isdigit", "isalpha", "isalnum", "isspace", "isupper", "islower", "isnumeric", "get",
                         "items", "keys", "values"}
# Jinja's filters whose output is at most a small multiple of their input (escape: 6x); the first group turns
# its input into text first, the second iterates it in Python (a step per item)
TEXT_FILTERS = ("capitalize", "e", "escape", "forceescape", "lower", "safe", "string", "striptags", "title", "trim",
                "truncate", "upper", "wordcount")
PER_ITEM_FILTERS = ("dictsort", "groupby", "map", "max", "min", "reject", "rejectattr", "select", "selectattr",
                    "sort", "unique")
OTHER_FILTERS = ("abs", "attr", "count", "d", "default", "first", "float", "int", "items", "last", "length", "list",
                 "reverse", "round")


class TemplateBudgetError(Exception):
    """A template went over its budget; the message says what it tried, for a sentence to the user."""


class Budget:
    """What one rendering may still spend."""

    def __init__(self, steps: int = MAX_STEPS, made: int = MAX_MADE_CHARS):
        self.steps, self.made = steps, made

    def step(self, n: int = 1) -> None:
        self.steps -= n
        if self.steps < 0:
            raise TemplateBudgetError(f"it ran more than {MAX_STEPS:,} steps (formatting a chat takes a few hundred)")

    def make(self, size: int, what: str = "a text or list") -> None:
        """Spend size characters (or items) on a value about to be made."""
        if size > MAX_VALUE_CHARS:
            raise TemplateBudgetError(f"it tried to make {what} of {size:,} characters or items (at most "
                                      f"{MAX_VALUE_CHARS:,})")
        self.made -= size
        if self.made < 0:
            raise TemplateBudgetError(f"it made more than {MAX_MADE_CHARS:,} characters in all")


_current = threading.local()  # .budget: the rendering running on this thread


def budget() -> Budget:
    spent = getattr(_current, "budget", None)
    if spent is None:
        raise TemplateBudgetError("it was run outside a budget")
    return spent


def render_within_budget(template_text: str, **variables) -> str:
    """The template rendered with variables, every step and character counted; TemplateBudgetError when it
    goes over, jinja2.TemplateError for a template that cannot be read."""
    _current.budget = Budget()
    try:
        template = compiled(template_text)
        previous = sys.gettrace()
        sys.settrace(_count_template_lines)
        try:
            return "".join(template.generate(**variables))
        finally:
            sys.settrace(previous)
    finally:
        _current.budget = None


def _count_template_lines(frame, event, arg):
    """Global trace function: trace the lines of compiled templates only (nothing else pays for it)."""
    return _count_line if frame.f_code.co_filename == TEMPLATE_FILE else None


def _count_line(frame, event, arg):
    if event == "line":
        budget().step()  # raising here raises in the template's frame (and ends the tracing)
    return _count_line


# ---------------------------------------------------------------- sizing values before they are made

def text_size(value, limit: int = MAX_VALUE_CHARS) -> int:
    """About how many characters str(value) has (at least that many for containers), found by walking value
    and stopping once past limit (TemplateBudgetError then); each value walked is paid for as made."""
    size, stack, walked = 0, [value], 0
    while stack:
        item = stack.pop()
        walked += 1
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, (bool, int, float)) or item is None:
            size += len(repr(item))
        elif isinstance(item, dict):
            size += 2 + 4 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset, KeysView, ValuesView, ItemsView)):
            size += 2 + 2 * len(item)
            stack.extend(item)
        elif isinstance(item, Namespace):
            stack.append(object.__getattribute__(item, "_Namespace__attrs"))
        else:  # Jinja's loop, macro, cycler and undefined objects, ranges, generators: short reprs
            size += 80
        if size > limit or walked > limit:
            raise TemplateBudgetError(f"it tried to turn a value of more than {limit:,} characters into text")
    budget().make(min(walked, MAX_VALUE_CHARS), "a walk")
    return size


def text_of(value) -> str:
    """str(value), sized and paid for first."""
    if not isinstance(value, str):
        budget().make(text_size(value), "a text")
        return str(value)
    budget().make(len(value), "a text")
    return value


def paid(value):
    """value after paying for it (strings and lists by their length; other values are small or lazy)."""
    if isinstance(value, (str, list, tuple, dict)):
        budget().make(len(value))
    return value


def items_paid(value):
    """value's items, a step each: as a list when it is one already or sized, else lazily as they are drawn."""
    if isinstance(value, Sized):
        budget().step(len(value))
        return value

    def drawn():
        for item in value:
            budget().step()
            yield item

    return drawn()


def int_bits(value) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def product_size(left, right) -> int:
    """Characters or items of left * right, from the operands alone (integers: their bits are checked)."""
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, (str, list, tuple)) and isinstance(times, int):
            return len(seq) * max(times, 0)
    if isinstance(left, int) and isinstance(right, int) and int_bits(left) + int_bits(right) > MAX_INT_BITS:
        raise TemplateBudgetError(f"it tried to compute a {int_bits(left) + int_bits(right):,}-bit number")
    return 0


def power(left, right):
    if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
        if right * int_bits(left) > MAX_INT_BITS:
            raise TemplateBudgetError(f"it tried to compute a number of about {right * int_bits(left):,} bits")
    return operator.pow(left, right)


# ---------------------------------------------------------------- filters and methods, sized first

def replaced(s, old, new, count=None) -> str:
    s, old, new = text_of(s), text_of(old), text_of(new)
    hits = len(s) + 1 if old == "" else s.count(old)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    budget().make(len(s) + hits * max(0, len(new) - len(old)))
    return s.replace(old, new, count if isinstance(count, int) else -1)


def joined(separator: str, items) -> str:
    items = list(items_paid(items))
    separator = text_of(separator)
    budget().make(sum(len(x) if isinstance(x, str) else text_size(x) for x in items) + len(separator) * len(items))
    return separator.join(map(str, items))


@pass_eval_context
def _join_filter(eval_ctx, value, d="", attribute=None):
    if attribute is not None:
        value = jinja_filters.sync_do_map(eval_ctx, items_paid(value), attribute=attribute)
    return joined(d, value)


def _indent_filter(s, width=4, first=False, blank=False):
    s = text_of(s)
    indentation = len(width) if isinstance(width, str) else width
    if not isinstance(indentation, int) or not 0 <= indentation <= MAX_INDENT:
        raise TemplateBudgetError(f"indent's width must be at most {MAX_INDENT}")
    budget().make(len(s) + indentation * (s.count("\n") + 1))
    return jinja_filters.do_indent(s, width, first, blank)


def _center_filter(value, width=80):
    value = text_of(value)
    if not isinstance(width, int):
        raise TemplateBudgetError("center's width must be a whole number")
    budget().make(max(width, len(value)))
    return jinja_filters.do_center(value, width)


@pass_eval_context
def _tojson_filter(eval_ctx, value, indent=None):
    if indent is not None and (not isinstance(indent, int) or not 0 <= indent <= MAX_INDENT):
        raise TemplateBudgetError(f"tojson's indent must be at most {MAX_INDENT}")
    budget().make(text_size(value) * (1 + (indent or 0)), "JSON")  # indentation: at most indent per character
    return jinja_filters.do_tojson(eval_ctx, value, indent)


@pass_environment
def _sum_filter(environment, iterable, attribute=None, start=0):
    items = list(items_paid(iterable))
    if attribute is not None:
        items = [jinja_filters.make_attrgetter(environment, attribute)(x) for x in items]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in [*items, start]):
        raise TemplateBudgetError("it used sum on something other than numbers")
    return sum(items, start)


def _sized(name: str, function):
    """Jinja's filter with its input sized first (a text filter) or paid for per item (a per-item filter),
    and its output paid for."""
    value_at = 1 if getattr(function, "jinja_pass_arg", None) is not None else 0  # after a context it is passed

    @functools.wraps(function)  # keeps jinja_pass_arg
    def filtered(*args, **kwargs):
        budget().step()
        value = args[value_at]
        value = text_of(value) if name in TEXT_FILTERS else items_paid(value) if name in PER_ITEM_FILTERS else value
        return paid(function(*args[:value_at], value, *args[value_at + 1:], **kwargs))

    return filtered


def sized_filters() -> dict:
    """The filters a template may use: Jinja's own whose cost their input bounds, sized versions of replace,
    join, indent, center, tojson and sum; not format, wordwrap, batch, slice, pprint, urlize and the like."""
    chosen = {name: _sized(name, jinja_filters.FILTERS[name])
              for name in TEXT_FILTERS + PER_ITEM_FILTERS + OTHER_FILTERS}
    chosen.update(replace=replaced, join=_join_filter, indent=_indent_filter, center=_center_filter,
                  tojson=_tojson_filter, sum=_sum_filter)
    return chosen


def _raise_exception(message="the chat template refused the messages"):
    """transformers' convention: a template calls raise_exception('...') on messages it cannot format."""
    raise TemplateRuntimeError(text_of(message)[:200])


# ---------------------------------------------------------------- the environment

class BudgetedCodeGenerator(CodeGenerator):
    """Jinja's compiler, with the template's constant text, its ~ operator and its slices paid for as they run."""

    def _output_const_repr(self, group) -> str:
        return f"environment.made({super()._output_const_repr(group)})"

    def visit_Concat(self, node, frame) -> None:
        self.write("environment.concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def visit_Getitem(self, node, frame) -> None:
        if not isinstance(node.arg, nodes.Slice):
            return super().visit_Getitem(node, frame)
        self.write("environment.sliced(")  # Jinja writes slices as Python's, past the sandbox's getitem
        self.visit(node.node, frame)
        self.write(", slice(")
        for part in (node.arg.start, node.arg.stop, node.arg.step):
            if part is None:
                self.write("None")
            else:
                self.visit(part, frame)
            self.write(", ")
        self.write("))")


class BudgetedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox with its operators, calls, slices, filters and output paid for."""

    code_generator_class = BudgetedCodeGenerator
    intercepted_binops = frozenset({"*", "+", "**", "%"})

    def __init__(self):
        super().__init__(trim_blocks=True, lstrip_blocks=True, optimized=False, finalize=text_of)
        self.filters = sized_filters()
        self.globals = {"range": safe_range, "dict": dict, "namespace": Namespace,
                        "raise_exception": _raise_exception}

    @staticmethod
    def made(text: str) -> str:
        budget().make(len(text), "a text")
        return text

    @staticmethod
    def concat(values) -> str:
        texts = [text_of(v) for v in values]
        budget().make(sum(map(len, texts)), "a text")
        return "".join(texts)

    @staticmethod
    def sliced(value, part: slice):
        if isinstance(value, (str, list, tuple)):
            budget().make(len(range(*part.indices(len(value)))))
        return value[part]

    def call_binop(self, context, op: str, left, right):
        if op == "*":
            budget().make(product_size(left, right))
        elif op == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, type(left)):
            budget().make(len(left) + len(right))
        elif op == "**":
            return power(left, right)
        elif op == "%" and isinstance(left, str):
            raise TemplateBudgetError("it formats text with %, which this app does not run")
        return super().call_binop(context, op, left, right)

    def wrap_str_format(self, value):
        return None  # str.format is refused by name (is_safe_attribute): {:>999999999} allocates a gigabyte

    def is_safe_attribute(self, obj, attr: str, value) -> bool:
        if callable(value) and isinstance(obj, (str, list, tuple, dict, int, float)) and attr not in SAFE_METHODS:
            return False  # 'x'.center(10**9), (1).to_bytes(10**9, 'big'): an argument sets their cost
        return super().is_safe_attribute(obj, attr, value)

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - Jinja's own signature
        budget().step()
        owner, name = getattr(__obj, "__self__", None), getattr(__obj, "__name__", "")
        if isinstance(owner, str) and name == "replace":
            return replaced(owner, *args, **kwargs)
        if isinstance(owner, str) and name == "join" and len(args) == 1:
            return joined(owner, args[0])
        if isinstance(owner, str) and name in MAKING:
            budget().make(len(owner))
        if isinstance(__obj, LoopContext) and args:  # a recursive loop's next level: its items are steps too
            args = (items_paid(args[0]), *args[1:])
        return super().call(__context, __obj, *args, **kwargs)


ENVIRONMENT = BudgetedEnvironment()


@functools.lru_cache(maxsize=16)
def compiled(template_text: str):
    """The template compiled once (Jinja compiles it to Python); the first compile runs within the first
    rendering's budget, as Jinja computes constant output while compiling."""
    return ENVIRONMENT.from_string(template_text)
