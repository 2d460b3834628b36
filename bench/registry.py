"""The regression benchmarks python -m bench knows: each a module bench/NAME.py with measure(argv) -> [Row].

Listing them imports none (their docstrings are read from the files); each runs in an interpreter of its own.
One-off studies live in bench/studies/ and are not listed here."""
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bench.results import Row, Skipped

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # the checkout: a benchmark's interpreter imports bench, explorer and model_core from here

# Cheap ones first: `--all` reports the quick verdicts before the long runs (a class, the app under attack).
REGRESSION = ("core", "views", "generation", "ablation", "examples", "patching", "startup", "app", "train",
              "first_evaluation", "trainers", "induction_phase", "grokking", "features", "memory", "classroom",
              "teacher", "hostile_class", "pretrained_views", "pretrained", "hub_class", "graphs")


@dataclass(frozen=True)
class Benchmark:
    name: str
    summary: str  # the first line of its docstring
    measure: Callable[[list[str]], list[Row]]  # command-line arguments -> rows


def docstring(module: str) -> str:
    """The module's docstring, read without importing it."""
    return ast.get_docstring(ast.parse((HERE / f"{module}.py").read_text())) or ""


def module_measure(module: str) -> Callable[[list[str]], list[Row]]:
    """module.measure(argv) (module: a dotted name), run in a fresh interpreter (bench/isolated.py says why);
    its output passes through. Skipped if it was; RuntimeError if it failed (its traceback is printed above)."""
    def measure(argv: list[str]) -> list[Row]:
        with tempfile.TemporaryDirectory(prefix="bench-") as folder:
            out = Path(folder) / "rows.json"
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
            done = subprocess.run([sys.executable, "-m", "bench.isolated", module, str(out), *argv], env=env)
            found = json.loads(out.read_text()) if out.exists() else {}
        if "skipped" in found:
            raise Skipped(found["skipped"])
        if done.returncode != 0 or "rows" not in found:
            raise RuntimeError(f"python -m {module} exited with {done.returncode} before returning its rows")
        return [Row(**row) for row in found["rows"]]
    return measure


def summary(doc: str) -> str:
    """The first sentence of a docstring, its command line (python -m bench.NAME [flags]) left out."""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    text = re.sub(r":? ?python -m bench\.\w+( \[[^]]*\])*[.:]? ?", " ", paragraph).strip()
    first = text.split(". ")[0].rstrip(".")
    return first[:1].upper() + first[1:] + ("" if first.endswith("?") else ".")


def module_benchmark(module: str) -> Benchmark:
    return Benchmark(module, summary(docstring(module)), module_measure(f"bench.{module}"))


BENCHMARKS: dict[str, Benchmark] = {name: module_benchmark(name) for name in REGRESSION}


def studies() -> list[str]:
    """The modules of bench/studies/ (run as python -m bench.studies.NAME)."""
    return sorted(p.stem for p in (HERE / "studies").glob("*.py") if p.stem != "__init__")
