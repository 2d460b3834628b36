"""An SAE's training, live: its loss, L0, dead fraction and explained variance against the step, one panel each
(their scales differ: a loss in squared units, a count of features, two shares)."""
import numpy as np

from explorer.figures.common import BLUE, GREEN, ORANGE, RED, compact, style_figure
from explorer.figures.plain import Figure, scatter, subplots

# metric -> (panel title, colour, y range or None, hover format)
PANELS = {
    "loss": ("loss (reconstruction error)", BLUE, None, ".4f"),
    "l0": ("L0: active features per token", ORANGE, None, ".1f"),
    "dead_fraction": ("dead fraction (none of the last 50k tokens)", RED, [0, 1], ".1%"),
    "explained_variance": ("explained variance (training batches)", GREEN, None, ".3f"),
}


def sae_training_figure(steps, series: dict, max_step: int) -> Figure:
    """series {metric: values per step} (PANELS' metrics) -> four small line charts sharing the step axis 0..max_step."""
    fig = subplots(rows=2, cols=2, subplot_titles=[p[0] for p in PANELS.values()], vertical_spacing=0.2,
                   horizontal_spacing=0.12)
    for index, (key, (title, colour, y_range, fmt)) in enumerate(PANELS.items()):
        row, col = index // 2 + 1, index % 2 + 1
        values = np.asarray(series.get(key, []), dtype=np.float64)
        fig.add_trace(scatter(x=list(steps), y=compact(values, 5), mode="lines", name=title, showlegend=False,
                              line=dict(color=colour), hovertemplate=f"step %{{x}}<br>{title}: %{{y:{fmt}}}"
                              "<extra></extra>"), row=row, col=col)
        fig.update_yaxes(**({"range": y_range} if y_range else {"rangemode": "tozero"} if key in ("loss", "l0") else {}),
                         **({"tickformat": ".0%"} if fmt == ".1%" else {}), row=row, col=col)
        fig.update_xaxes(range=[0, max(1, max_step)], title_text="training step" if row == 2 else None,
                         row=row, col=col)
    return style_figure(fig, "Training the SAE", height=520, margin=dict(t=90))
