"""The classroom benchmark's numbers: latency percentiles and answer sizes per endpoint, trainers' speed, memory,
targets met or missed, the tables."""
import math
import statistics

from bench.results import Row, at_most
from bench.timing import print_table

GB, MB, KB = 1e9, 1e6, 1e3
SHOWN_ERRORS = 5
# (name, what it reads, limit). Own models: issue #19's targets for a class on models of their own; shared
# model: the earlier targets of the easy case, where the class shares the server's cached answers.
TARGETS = {
    "own models": (("Attention p95, class (s)", "attention", 1.0), ("Attention p95, alone (s)", "attention alone", 0.3),
                   ("Compare p95, class (s)", "compare", 3.0)),
    "shared model": (("Attention p95, class (s)", "attention", 1.5), ("Attention p95, alone (s)", "attention alone", 0.3),
                     ("Compare p95, class (s)", "compare", 5.0)),
}
TRAINER_SPREAD = 0.25  # fastest trainer's steps/s at most 25 % above the slowest's
PEAK_RSS_GB = 3.0


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def latencies(tally) -> dict[str, dict]:
    """{endpoint: {n, p50, p95, max} in seconds, bytes: median answer size}."""
    return {e: {"n": len(v), "p50": percentile(v, 50), "p95": percentile(v, 95), "max": max(v),
                "bytes": statistics.median(tally.payload.get(e) or [0])}
            for e, v in sorted(tally.latencies.items())}


def steps_per_second(samples: list[tuple[float, int]]) -> float | None:
    """A trainer's steps/s from its (time, step) polls while running: from the first poll past step 0 to the
    last one (the run's start-up is not counted). None with fewer than two such polls."""
    moving = [(t, step) for t, step in samples if step > 0]
    if len(moving) < 2 or moving[-1][0] <= moving[0][0]:
        return None
    return (moving[-1][1] - moving[0][1]) / (moving[-1][0] - moving[0][0])


def trainers(tally) -> dict[str, dict]:
    """{trainer: {steps: the last step seen running, steps_per_s}}."""
    return {who: {"steps": samples[-1][1], "steps_per_s": steps_per_second(samples)}
            for who, samples in sorted(tally.progress.items())}


def trainer_spread(table: dict) -> float | None:
    """Fastest ÷ slowest trainer's steps/s − 1 (0: equal), or None with fewer than two measured trainers."""
    rates = [t["steps_per_s"] for t in table.values() if t["steps_per_s"]]
    return max(rates) / min(rates) - 1 if len(rates) >= 2 else None


def targets(numbers: dict) -> list[dict]:
    """Each target with the measured value and whether it is met (a missing measurement is a miss)."""
    mode = numbers["settings"]["mode"]
    cls, alone = numbers["class"], numbers["alone"]
    p95 = {e: s["p95"] for e, s in cls["latency"].items()} | {f"{e} alone": s["p95"] for e, s in alone["latency"].items()}
    rows = [("errors", cls["errors"] + alone["errors"], 0), ("cross-talk", cls["crosstalk"] + alone["crosstalk"], 0)]
    if mode == "own models":
        rows.append(("answers equal to the shipped model's (shared cache)", cls["shipped"] + alone["shipped"], 0))
    rows += [(name, p95.get(key, math.inf), limit) for name, key, limit in TARGETS[mode]]
    if numbers["settings"]["trainers"] >= 2:
        spread = trainer_spread(cls["trainers"])
        rows.append(("trainers' steps/s, fastest ÷ slowest − 1", math.inf if spread is None else spread, TRAINER_SPREAD))
    rows.append(("peak RSS, server and descendants (GB)", numbers["peak_rss_bytes"] / GB, PEAK_RSS_GB))
    return [{"target": name, "value": value, "limit": limit, "met": value <= limit} for name, value, limit in rows]


def target_rows(numbers: dict) -> list[Row]:
    """The targets as result rows (every one is a value <= its limit)."""
    mode = numbers["settings"]["mode"]
    return [at_most(f"{mode}: {t['target']}", t["value"], "", t["limit"]) for t in numbers["targets"]]


def _tally_numbers(tally) -> dict:
    return {"latency": latencies(tally), "errors": len(tally.errors), "crosstalk": len(tally.crosstalk),
            "shipped": len(tally.shipped), "trainers": trainers(tally),
            "timeline": sorted(tally.timeline, key=lambda event: event[1]), "first_errors": tally.errors[:SHOWN_ERRORS],
            "first_crosstalk": tally.crosstalk[:SHOWN_ERRORS], "first_shipped": tally.shipped[:SHOWN_ERRORS]}


def summary(args, class_tally, alone_tally, memory, memory_at: dict, outlived: int) -> dict:
    """All the numbers; memory: the MemorySampler (peak RSS and PSS of the server's process tree); memory_at:
    {moment: {rss_bytes, pss_bytes, processes}} of that tree at named moments."""
    settings = {k: v for k, v in vars(args).items() if k != "json"}
    settings["mode"] = "shared model" if args.shared_model else "own models"
    numbers = {"settings": settings, "class": _tally_numbers(class_tally), "alone": _tally_numbers(alone_tally),
               "peak_rss_bytes": memory.peak, "peak_pss_bytes": memory.peak_pss,
               "peak_processes": memory.peak_processes, "memory_at": memory_at, "processes_outliving_app": outlived}
    numbers["targets"] = targets(numbers)
    return numbers


def _latency_rows(numbers: dict) -> list[list]:
    cls, alone = numbers["class"]["latency"], numbers["alone"]["latency"]
    rows = []
    for e in sorted(set(cls) | set(alone), key=lambda e: (e not in alone, e)):
        a, c = alone.get(e), cls.get(e)
        shown = [f"{a['p50']:.3f}", f"{a['p95']:.3f}"] if a else ["", ""]
        shown += [c["n"], f"{c['p50']:.3f}", f"{c['p95']:.3f}", f"{c['max']:.3f}"] if c else ["", "", "", ""]
        rows.append([f"/{e}", *shown, f"{(c or a)['bytes'] / KB:,.1f}"])
    return rows


def _print_problems(label: str, part: dict) -> None:
    for kind in ("errors", "crosstalk", "shipped"):
        if part[kind]:
            print(f"{label} {kind}: {part[kind]}, the first {len(part['first_' + kind])}:")
            for line in part["first_" + kind]:
                print(f"  {line}")


def _print_memory(numbers: dict) -> None:
    at = numbers["memory_at"]
    rows = [[moment, f"{m['rss_bytes'] / MB:,.0f}", f"{m['pss_bytes'] / MB:,.0f}", m["processes"],
             f"{m['server_rss_bytes'] / MB:,.0f}"] for moment, m in at.items()]
    rows.append(["peak", f"{numbers['peak_rss_bytes'] / MB:,.0f}", f"{numbers['peak_pss_bytes'] / MB:,.0f}",
                 numbers["peak_processes"], ""])
    print_table("Memory, MB (RSS counts pages shared between processes once per process, PSS splits them)",
                ["moment", "RSS, server + descendants", "PSS", "processes", "RSS, server process"], rows)
    if "before the class" in at and "after the class" in at:
        grown = at["after the class"]["server_rss_bytes"] - at["before the class"]["server_rss_bytes"]
        print(f"the server process grew {grown / MB:,.0f} MB over the class: "
              f"{grown / max(1, numbers['settings']['sessions']) / MB:,.1f} MB per class session")
    print(f"processes still alive 5 s after the app exited (ended by the benchmark): "
          f"{numbers['processes_outliving_app']}")


def print_report(numbers: dict) -> None:
    s = numbers["settings"]
    header = ["endpoint", "alone p50 s", "alone p95 s", "class n", "p50 s", "p95 s", "max s", "answer kB"]
    print_table(f"{s['mode']}: {s['sessions']} sessions ({s['trainers']} training), {s['seconds']:g} s, think "
                f"{s['think']:g} s; alone: 1 session before the class (answer kB: median size of an answer as "
                f"JSON)", header, _latency_rows(numbers))
    rates = numbers["class"]["trainers"]
    if rates:
        print_table("Trainers (steps/s from the first step polled to the last, start-up not counted)",
                    ["trainer", "last step", "steps/s"],
                    [[who, t["steps"], "" if t["steps_per_s"] is None else f"{t['steps_per_s']:.2f}"]
                     for who, t in rates.items()])
    _print_problems("class", numbers["class"])
    _print_problems("alone", numbers["alone"])
    _print_memory(numbers)
    rows = [[t["target"], _shown(t["value"]), f"<= {t['limit']:g}", "PASS" if t["met"] else "MISS"]
            for t in numbers["targets"]]
    print_table("Targets", ["target", "measured", "limit", ""], rows)


def _shown(value) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"
