"""Progress measures over training (model_core.analysis.progress), drawn on the loss chart's step axis so a
phase change lines up with the loss: scores in [0, 1] on the left axis, losses in nats on the right."""
import numpy as np

from explorer.figures.common import BLUE, GREEN, ORANGE, PURPLE, RED, compact, style_figure, top_legend
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
                              hovertemplate=f"step %{{x}}<br>{name}: %{{y:.3f}}<extra></extra>"))
    has_right = any(MEASURES[k][2] for k in series)
    fig.update_layout(yaxis=dict(title_text="score / accuracy (0 to 1)", range=[0, 1.02]),
                      **({"yaxis2": dict(title_text="nats", overlaying="y", side="right", showgrid=False)}
                         if has_right else {}))
    fig.update_xaxes(title_text="training step", **({"range": [0, max_step]} if max_step else {}))
    return style_figure(fig, "Progress measures (measured at every evaluation)", height=360,
                        legend=top_legend(), margin=dict(t=110, r=70))
