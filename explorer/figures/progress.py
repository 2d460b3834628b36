"""Progress measures over training (model_core.analysis.progress), drawn on the loss chart's step axis so a
phase change lines up with the loss: scores in [0, 1] on the left axis, losses in nats on the right."""
import numpy as np

from explorer.figures.common import (
    ADVANCED_TRACE,
    BLUE,
    GREEN,
    ORANGE,
    PURPLE,
    RED,
    compact,
    style_figure,
    top_legend,
    value_range,
)
from explorer.figures.plain import Figure, scatter

# measure -> (legend name, colour, right axis?)
MEASURES = {
    "induction": ("induction score (strongest head)", RED, False),
    "prev_token": ("previous-token score (strongest head)", BLUE, False),
    "k_composition": ("K-composition (strongest pair)", PURPLE, False),
    "icl": ("in-context learning: late − early loss (nats, right)", GREEN, True),
    "train_acc": ("train accuracy", BLUE, False),
    "val_acc": ("test accuracy (pairs never trained on)", ORANGE, False),
    "restricted_loss": ("restricted loss (key frequencies only, right)", PURPLE, True),
    "excluded_loss": ("excluded loss (key frequencies removed, right)", RED, True),
}
# The right axis (nats) spans at least this much, from 0: an in-context-learning score that moves by 0.005 nats
# is a flat line near 0, not noise stretched over the chart's height (an induction head moves it by ~0.5-1.5).
# Its ticks are its own round numbers ('auto'; an overlaying axis would put them at the left axis's gridlines).
MIN_NATS_SPAN = 0.5
ADVANCED = {"k_composition"}  # measures for advanced students: marked so that Simple view leaves them out


def progress_series(evals: list[dict]) -> tuple[list, dict]:
    """Evaluation rows -> (steps, {measure: values, NaN where missing}) for the measures present."""
    steps = [e["step"] for e in evals]
    series = {k: [np.nan if e.get(k) is None else float(e[k]) for e in evals] for k in MEASURES
              if any(e.get(k) is not None for e in evals)}
    return steps, series


def progress_figure(steps, series: dict, max_step=None) -> Figure:
    """Lines of the progress measures over training steps; x from 0 to max_step (the loss chart's range)."""
    fig = Figure()
    for key, values in series.items():
        name, colour, right = MEASURES[key]
        fig.add_trace(scatter(x=list(steps), y=compact(values, 3), mode="lines+markers", name=name,
                              yaxis="y2" if right else "y", line=dict(color=colour, dash="dot" if right else "solid"),
                              hovertemplate=f"step %{{x}}<br>{name}: %{{y:.3f}}<extra></extra>",
                              meta=ADVANCED_TRACE if key in ADVANCED else None))
    right = [v for k, values in series.items() if MEASURES[k][2] for v in values]
    fig.update_layout(yaxis=dict(title_text="score / accuracy (0 to 1)", range=[0, 1.02]),
                      **({"yaxis2": dict(title_text="nats", overlaying="y", side="right", showgrid=False,
                                         range=value_range(right, MIN_NATS_SPAN), tickmode="auto")} if right else {}))
    fig.update_xaxes(title_text="training step", **({"range": [0, max_step]} if max_step else {}))
    return style_figure(fig, "Progress measures (measured at every evaluation)", height=360,
                        legend=top_legend(), margin=dict(t=110, r=70))
