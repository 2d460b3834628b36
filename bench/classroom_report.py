"""The classroom benchmark's numbers: latency percentiles per endpoint, targets met or missed, the table."""
import math

from bench.timing import print_table

GB = 1e9
SHOWN_ERRORS = 5


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def latencies(tally) -> dict[str, dict]:
    """{endpoint: {n, p50, p95, max}} in seconds."""
    return {e: {"n": len(v), "p50": percentile(v, 50), "p95": percentile(v, 95), "max": max(v)}
            for e, v in sorted(tally.latencies.items())}


def targets(numbers: dict) -> list[dict]:
    """Each target with the measured value and whether it is met (a missing measurement is a miss)."""
    n = numbers["settings"]["sessions"]
    cls, alone = numbers["class"]["latency"], numbers["alone"]["latency"]
    p95 = lambda table, e: table.get(e, {}).get("p95", math.inf)  # noqa: E731
    rows = [
        ("errors", numbers["class"]["errors"] + numbers["alone"]["errors"], 0),
        ("cross-talk", numbers["class"]["crosstalk"] + numbers["alone"]["crosstalk"], 0),
        (f"Attention p95, {n} sessions (s)", p95(cls, "attention"), 1.5),
        ("Attention p95, alone (s)", p95(alone, "attention"), 0.3),
        (f"Compare p95, {n} sessions (s)", p95(cls, "compare"), 5.0),
        ("peak RSS, server and descendants (GB)", numbers["peak_rss_bytes"] / GB, 3.0),
    ]
    return [{"target": name, "value": value, "limit": limit, "met": value <= limit} for name, value, limit in rows]


def _tally_numbers(tally) -> dict:
    return {"latency": latencies(tally), "errors": len(tally.errors), "crosstalk": len(tally.crosstalk),
            "timeline": sorted(tally.timeline, key=lambda event: event[1]), "first_errors": tally.errors[:SHOWN_ERRORS], "first_crosstalk": tally.crosstalk[:SHOWN_ERRORS]}


def summary(args, class_tally, alone_tally, class_peak: int, memory, outlived: int) -> dict:
    """All the numbers; memory: the MemorySampler (peak RSS and PSS of the server's process tree)."""
    numbers = {"settings": {k: v for k, v in vars(args).items() if k != "json"},
               "class": _tally_numbers(class_tally), "alone": _tally_numbers(alone_tally),
               "peak_rss_bytes": memory.peak, "class_peak_rss_bytes": class_peak, "peak_pss_bytes": memory.peak_pss,
               "peak_processes": memory.peak_processes, "processes_outliving_app": outlived}
    numbers["targets"] = targets(numbers)
    return numbers


def _latency_rows(table: dict) -> list[list]:
    return [[f"/{e}", s["n"], f"{s['p50']:.3f}", f"{s['p95']:.3f}", f"{s['max']:.3f}"] for e, s in table.items()]


def _print_problems(label: str, part: dict) -> None:
    for kind in ("errors", "crosstalk"):
        if part[kind]:
            print(f"{label} {kind}: {part[kind]}, the first {len(part['first_' + kind])}:")
            for line in part["first_" + kind]:
                print(f"  {line}")


def print_report(numbers: dict) -> None:
    s = numbers["settings"]
    header = ["endpoint", "n", "p50 s", "p95 s", "max s"]
    print_table(f"{s['sessions']} sessions ({s['trainers']} training), {s['seconds']:g} s, think {s['think']:g} s",
                header, _latency_rows(numbers["class"]["latency"]))
    print_table("1 session alone", header, _latency_rows(numbers["alone"]["latency"]))
    _print_problems("class", numbers["class"])
    _print_problems("alone", numbers["alone"])
    print(f"\npeak RSS, server + descendants: {numbers['peak_rss_bytes'] / 1e6:,.0f} MB over "
          f"{numbers['peak_processes']} processes (during the class {numbers['class_peak_rss_bytes'] / 1e6:,.0f} MB; "
          f"shared pages counted once per process; peak PSS, shared pages split: "
          f"{numbers['peak_pss_bytes'] / 1e6:,.0f} MB)\nprocesses still alive 5 s after the app exited (ended by the "
          f"benchmark): {numbers['processes_outliving_app']}")
    rows = [[t["target"], _shown(t["value"]), f"<= {t['limit']:g}", "PASS" if t["met"] else "MISS"]
            for t in numbers["targets"]]
    print_table("Targets", ["target", "measured", "limit", ""], rows)


def _shown(value) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"
