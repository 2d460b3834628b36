"""Heavy analyses are bounded before they start: their cost (model_core.analysis.cost: rows x tokens x model size)
against --max-heavy-work, refused with a sentence that says how much to shorten. The heavy slot
(explorer.state.heavy_slot) then runs the admitted ones in turns."""
from typing import Callable

from explorer.common.errors import UserError
from explorer.common.limits import LIMITS

# Operations a second of one request (one torch thread) on the batched passes of a sweep: SmolLM2's 16-token
# residual sweep (4.3e11 operations) took 3.7 s on two threads of a 2-core AMD EPYC (docs/benchmarks.md), about
# 115e9 a second, so about half that on one. Only for the sentence's "about N s": the limit is in operations.
OPS_PER_SECOND = 60e9


def limit_ops() -> float:
    return LIMITS.max_heavy_gops * 1e9


def fits(ops: float) -> bool:
    return ops <= limit_ops()


def duration(ops: float) -> str:
    """'under a second', 'about 3 s', 'about 40 minutes', 'about 2 hours' of this server's time."""
    seconds = ops / OPS_PER_SECOND
    if seconds < 1:
        return "under a second"
    if seconds < 90:
        return f"about {round(seconds)} s"
    if seconds < 5400:
        return f"about {round(seconds / 60)} minutes"
    return f"about {round(seconds / 3600):,} hours"


def refuse_unless_fits(ops: float, what: str, shorten: str) -> None:
    """UserError when ops is over the limit: what would take how long, the limit, and shorten (what to do)."""
    if not fits(ops):
        raise UserError(f"{what} would take {duration(ops)} of this server's time ({_billions(ops / 1e9)} billion "
                        f"operations); one request may ask for at most {_billions(LIMITS.max_heavy_gops)} billion "
                        f"({duration(limit_ops())}), so that everyone's analyses keep their turn. {shorten}")


def _billions(gops: float) -> str:
    return f"{gops:,.0f}" if gops >= 10 else f"{gops:.2g}"


def largest_fitting(cost: Callable[[int], float], high: int, low: int = 1) -> int:
    """The largest n in low..high with cost(n) within the limit (cost grows with n), or low - 1 when none fits."""
    if not fits(cost(low)):
        return low - 1
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(cost(middle)) else (low, middle - 1)
    return low
