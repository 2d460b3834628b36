"""Side-by-side timing for noisy machines: interleave the contenders, compare medians."""
import statistics
import time
from typing import Callable


def interleaved_seconds(contenders: dict[str, Callable[[], None]], rounds: int, repeats: int,
                        warmup: int = 2) -> dict[str, float]:
    """Median seconds per call of each contender, measured in alternating rounds so drift hits all alike."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    samples = {name: [] for name in contenders}
    for r in range(rounds):
        order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
        for name in order:
            start = time.perf_counter()
            for _ in range(repeats):
                contenders[name]()
            samples[name].append((time.perf_counter() - start) / repeats)
    return {name: statistics.median(s) for name, s in samples.items()}


def print_table(title: str, header: list[str], rows: list[list]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    print(f"\n{title}\n{line(header)}\n{line(['-' * w for w in widths])}")
    for row in rows:
        print(line(row))


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of fn(). On a loaded machine the CPU time / threads is
    what the wall time would be on idle cores."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def median_row(name: str, samples: list[tuple[float, float]], threads: int) -> list[str]:
    wall, cpu = [s[0] for s in samples], [s[1] for s in samples]
    return [name, f"{statistics.median(wall):.2f}", f"{min(wall):.2f}", f"{statistics.median(cpu):.2f}",
            f"{statistics.median(cpu) / threads:.2f}"]
