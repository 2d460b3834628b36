"""Progress measures over training (model_core.analysis.progress), drawn on the loss chart's step axis so a
phase change lines up with the loss: scores in [0, 1] in the upper panel, losses in nats in a panel of their own
below (never a second y axis over the same plot, whose 0 would sit beside the other axis's 1)."""
import numpy as np

from explorer.figures.common import (
    ADVANCED_TRACE,
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    RED,
    UNIT_RANGE,
    UNIT_TICKS,
    WIDE_CHART,
    compact,
    faded,
    step_panels,
    style_figure,
    top_legend,
    value_range,
)
from explorer.figures.plain import Figure, scatter

# measure -> (legend name, colour, in nats? (the lower panel; else a score from 0 to 1, the upper one))
MEASURES = {
    "induction": ("induction score (strongest head)", RED, False),
    "prev_token": ("previous-token score (strongest head)", BLUE, False),
    "k_composition": ("K-composition (strongest pair)", PURPLE, False),
    "icl": ("in-context learning: late − early loss (nats)", GREEN, True),
    "train_acc": ("train accuracy", BLUE, False),
    "val_acc": ("test accuracy (pairs never trained on)", ORANGE, False),
    "restricted_loss": ("restricted loss (key frequencies only, nats)", PURPLE, True),
    "excluded_loss": ("excluded loss (key frequencies removed, nats)", RED, True),
}
# The nats axis spans at least this much, and always 0: an in-context-learning score that moves by 0.005 nats
# is a flat line near 0, not noise stretched over the panel's height (an induction head moves it by ~0.5-1.5).
MIN_NATS_SPAN = 0.5
ADVANCED = {"k_composition"}  # measures for advanced students: marked so that Simple view leaves them out
SCORE_AXIS = dict(range=UNIT_RANGE, tickvals=UNIT_TICKS)
ACCURACIES = {"train_acc", "val_acc"}


def score_axis(*series_sets: dict) -> dict:
    """The upper panel's y axis, from 0 to 1, titled by what it holds: scores, accuracies or both."""
    keys = {k for series in series_sets for k in series if not MEASURES[k][2]}
    accuracies = keys & ACCURACIES
    title = "score" if not accuracies else "accuracy" if accuracies == keys else "score / accuracy"
    return dict(SCORE_AXIS, title_text=title)


def progress_series(evals: list[dict]) -> tuple[list, dict]:
    """Evaluation rows -> (steps, {measure: values, NaN where missing}) for the measures present."""
    steps = [e["step"] for e in evals]
    series = {k: [np.nan if e.get(k) is None else float(e[k]) for e in evals] for k in MEASURES
              if any(e.get(k) is not None for e in evals)}
    return steps, series


def nats_axis(*series_sets: dict) -> dict:
    """The lower panel's y axis: every value in nats (of each run drawn) and 0 (drawn darker: above it a loss,
    below it a fall)."""
    values = [v for series in series_sets for k, vs in series.items() if MEASURES[k][2] for v in vs]
    return dict(title_text="nats", range=value_range(values, MIN_NATS_SPAN), zeroline=True, zerolinecolor=GREY)


def measure_lines(steps, series: dict) -> list:
    """One line per progress measure, in series' order (an advanced one marked for Simple view to leave out)."""
    lines = []
    for key, values in series.items():
        name, colour, _ = MEASURES[key]
        lines.append(scatter(x=list(steps), y=compact(values, 3), mode="lines+markers", name=name,
                             line=dict(color=colour), hovertemplate=f"step %{{x}}<br>{name}: %{{y:.3f}}<extra></extra>",
                             meta=ADVANCED_TRACE if key in ADVANCED else None))
    return lines


def progress_figure(steps, series: dict, max_step=None, previous=None) -> Figure:
    """Lines of the progress measures over training steps, scores above and nats below (a panel only for a unit
    present); x from 0 to max_step (the loss chart's range). previous: (legend label, steps, series) of an earlier
    run, drawn faded on the same panels for comparison."""
    earlier = previous[2] if previous else {}
    units = [nats for nats in (False, True) if any(MEASURES[k][2] == nats for k in (*series, *earlier))] or [False]
    fig = step_panels(len(units))
    lines = faded(measure_lines(previous[1], earlier), previous[0]) if previous else []
    for line, key in zip(lines + measure_lines(steps, series), [*earlier, *series]):
        fig.add_trace(line, row=units.index(MEASURES[key][2]) + 1, col=1)
    for row, nats in enumerate(units, start=1):
        fig.update_yaxes(row=row, col=1, **(nats_axis(series, earlier) if nats else score_axis(series, earlier)))
    fig.update_xaxes(**({"range": [0, max_step]} if max_step else {}))
    fig.update_xaxes(title_text="training step", row=len(units), col=1)
    return style_figure(fig, "Progress measures (measured at every evaluation)", height=240 + 120 * len(units),
                        chart_width=WIDE_CHART, legend=top_legend(), margin=dict(t=110))  # across the Train tab
