"""One schema for every regression benchmark's results: a Row per measurement, with its target and whether it
was met. python -m bench runs benchmarks and collects their rows; a benchmark module's own main() prints them."""
import math
from dataclasses import asdict, dataclass
from typing import Union

Value = Union[float, int, str, None]  # None: not measured (a NaN read back from JSON)


@dataclass(frozen=True)
class Row:
    name: str  # what was measured, e.g. "Attention view / its forward pass"
    value: Value  # the measurement: a number, or a text (a chat answer, "nothing lost")
    unit: str  # "s", "ms", "x", "MB", "tokens/s"; "" for a count or a text
    target: str = ""  # "<= 300", ">= 0.97", "names Paris"; "" when the row only informs
    met: Union[bool, None] = None  # None when there is no target

    def as_dict(self) -> dict:
        """The row for JSON: a value that was not measured (NaN, infinite) becomes null."""
        d = asdict(self)
        if isinstance(self.value, float) and not math.isfinite(self.value):
            d["value"] = None
        return d


class Skipped(Exception):
    """Raised by a benchmark that cannot run here (a model or package it measures is not installed): the
    message says what is missing and how to install it. Not a failure: no target was measured."""


def at_most(name: str, value: float, unit: str, limit: float) -> Row:
    """A row whose target is value <= limit (a missing measurement, NaN, misses it)."""
    return Row(name, value, unit, f"<= {limit:g}", bool(value <= limit))


def at_least(name: str, value: float, unit: str, limit: float) -> Row:
    return Row(name, value, unit, f">= {limit:g}", bool(value >= limit))


def check(name: str, value: Value, target: str, met: bool) -> Row:
    """A row whose target is a condition in words ("names Paris", "nothing lost")."""
    return Row(name, value, "", target, bool(met))


def info(name: str, value: Value, unit: str = "") -> Row:
    """A row that only informs: no target."""
    return Row(name, value, unit)


def missed(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.met is False]


def shown_value(value: Value) -> str:
    """3 significant figures, thousands grouped: 0.997, 14.4, 25,884; texts as they are."""
    if value is None:  # NaN, as JSON carries it
        return "not measured"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "not measured" if math.isnan(value) else str(value)
    if isinstance(value, int) or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def verdict(row: Row) -> str:
    return "" if row.met is None else "met" if row.met else "MISSED"


def table_lines(rows: list[Row], markdown: bool = False) -> list[str]:
    """The rows as a table: aligned columns for a terminal, or a Markdown table."""
    header = ["measurement", "value", "unit", "target", ""]
    cells = [[r.name, shown_value(r.value), r.unit, r.target, verdict(r)] for r in rows]
    if markdown:
        escape = lambda text: text.replace("|", "\\|")  # noqa: E731
        marks = {"met": "✔", "MISSED": "✘ missed"}
        lines = ["| " + " | ".join(header[:4]) + " | met |", "| --- | --- | --- | --- | --- |"]
        return lines + ["| " + " | ".join([*map(escape, c[:4]), marks.get(c[4], "")]) + " |" for c in cells]
    widths = [max(len(c[i]) for c in [header, *cells]) for i in range(len(header))]
    line = lambda c: "  ".join(x.ljust(w) for x, w in zip(c, widths)).rstrip()  # noqa: E731
    return [line(header), line(["-" * w for w in widths])] + [line(c) for c in cells]


def print_rows(title: str, rows: list[Row]) -> int:
    """Print the rows under a title and a one-line verdict; the exit code: 1 if a target was missed, else 0."""
    print(f"\n{title}")
    print("\n".join(table_lines(rows)))
    judged, failed = [r for r in rows if r.met is not None], missed(rows)
    if not judged:
        print("no targets: these rows only inform")
    else:
        print(f"{len(judged) - len(failed)} of {len(judged)} targets met" +
              (": missed " + "; ".join(r.name for r in failed) if failed else ""))
    return 1 if failed else 0


def run_main(measure, argv=None, title: str = "Targets") -> int:
    """A benchmark module's main(): measure(argv), print the rows; exit code 1 if a target was missed."""
    try:
        rows = measure(argv)
    except Skipped as why:
        print(f"skipped: {why}")
        return 0
    return print_rows(title, rows)
