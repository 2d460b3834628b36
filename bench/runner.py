"""Run registered benchmarks one after another and keep what each returned: its rows, or why it did not run.

A failed benchmark (an exception) does not stop the others; it counts as a miss. A Skipped one (a model or
package not installed) is reported and does not."""
import json
import shlex
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from bench.registry import BENCHMARKS
from bench.results import Row, Skipped, missed


@dataclass
class Run:
    benchmark: str
    args: list[str]
    rows: list[Row] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""  # the exception's last line when it failed
    skipped: str = ""  # why it did not run

    @property
    def command(self) -> str:
        return shlex.join(["python", "-m", "bench", shlex.join([self.benchmark, *self.args])])

    @property
    def status(self) -> str:
        if self.error:
            return "failed"
        if self.skipped:
            return "skipped"
        return "missed" if missed(self.rows) else "met"

    def as_dict(self) -> dict:
        return {"benchmark": self.benchmark, "args": self.args, "command": self.command, "status": self.status,
                "seconds": round(self.seconds, 1), "error": self.error, "skipped": self.skipped,
                "rows": [r.as_dict() for r in self.rows]}


def parse_request(text: str) -> tuple[str, list[str]]:
    """'views --repeats 3' -> ('views', ['--repeats', '3']); ValueError naming the known benchmarks."""
    words = shlex.split(text)
    if not words or words[0] not in BENCHMARKS:
        raise ValueError(f"no benchmark named {words[0] if words else text!r}; "
                         f"known: {', '.join(BENCHMARKS)} (python -m bench lists them)")
    return words[0], words[1:]


def run_one(name: str, args: list[str]) -> Run:
    run, began = Run(name, args), time.perf_counter()
    print(f"\n=== {run.command}", flush=True)
    try:
        run.rows = list(BENCHMARKS[name].measure(args))
    except Skipped as why:
        run.skipped = str(why)
    except SystemExit as stop:  # argparse refusing a flag: the benchmark did not run
        run.error = f"exited with {stop.code} (bad arguments?)"
    except Exception as err:  # noqa: BLE001 - reported, and the next benchmark runs
        traceback.print_exc()
        run.error = f"{type(err).__name__}: {err}".splitlines()[0][:300]
    run.seconds = time.perf_counter() - began
    return run


def exit_code(runs: list[Run]) -> int:
    """1 when a target was missed or a benchmark failed, else 0."""
    return 1 if any(r.status in ("missed", "failed") for r in runs) else 0


def write_json(path: Path, machine: dict, runs: list[Run]) -> None:
    document = {"machine": machine, "exit_code": exit_code(runs), "runs": [r.as_dict() for r in runs]}
    Path(path).write_text(json.dumps(document, indent=1, ensure_ascii=False, default=str) + "\n")
