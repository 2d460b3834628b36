"""An SAE's (or a transcoder set's) training, live: its loss, L0, dead fraction and explained variance against the
step, one panel each (their scales differ: a loss in squared units, a count of features, two shares)."""
import numpy as np

from explorer.figures.common import BLUE, GREEN, GREY, ORANGE, RED, compact, style_figure
from explorer.figures.plain import Figure, scatter, subplots

# metric -> (panel title, colour, y range or None, hover format)
PANELS = {
    "loss": ("loss (reconstruction error)", BLUE, None, ".4f"),
    "l0": ("L0: active features per token", ORANGE, None, ".1f"),
    "dead_fraction": ("dead fraction", RED, [0, 1], ".1%"),
    "explained_variance": ("explained variance (training batches)", GREEN, None, ".3f"),
}


def sae_training_figure(steps, series: dict, max_step: int, title: str = "Training the SAE", dead_tokens: int = 0,
                        layer_starts: dict | None = None) -> Figure:
    """series {metric: values per step} (PANELS' metrics) -> four small line charts sharing the step axis 0..max_step.
    dead_tokens: the run's dead window (named in the dead panel's title); layer_starts {layer: first step}: a
    transcoder set's layers, each start marked by a dotted line labelled "layer N"."""
    dead = f"dead fraction (fired on none of the last {dead_tokens:,} tokens)" if dead_tokens else PANELS[
        "dead_fraction"][0]
    titles = [dead if key == "dead_fraction" else p[0] for key, p in PANELS.items()]
    fig = subplots(rows=2, cols=2, subplot_titles=titles, vertical_spacing=0.2, horizontal_spacing=0.12)
    x = np.asarray(steps, dtype=np.float64)
    breaks = np.searchsorted(x, [s for s in (layer_starts or {}).values() if s > 0], side="right")
    breaks = breaks[(breaks > 0) & (breaks < len(x))]  # each layer's line starts afresh: a gap before its first point
    x_shown = np.insert(x, breaks, np.nan)
    x_shown = [None if np.isnan(v) else v for v in x_shown.tolist()]
    for index, (key, (title_, colour, y_range, fmt)) in enumerate(PANELS.items()):
        row, col = index // 2 + 1, index % 2 + 1
        values = np.insert(np.asarray(series.get(key, []), dtype=np.float64), breaks, np.nan)
        fig.add_trace(scatter(x=x_shown, y=compact(values, 5), mode="lines", name=titles[index], showlegend=False,
                              line=dict(color=colour), hovertemplate=f"step %{{x}}<br>{title_}: %{{y:{fmt}}}"
                              "<extra></extra>"), row=row, col=col)
        fig.update_yaxes(**({"range": y_range} if y_range else {"rangemode": "tozero"} if key in ("loss", "l0") else {}),
                         **({"tickformat": ".0%"} if fmt == ".1%" else {}), row=row, col=col)
        fig.update_xaxes(range=[0, max(1, max_step)], title_text="training step" if row == 2 else None,
                         row=row, col=col)
        xref, yref = fig.cells[(row, col)]
        for layer, start in (layer_starts or {}).items():
            fig.add_vline(start, row=row, col=col, line=dict(color=GREY, width=1, dash="dot"))
            if row == 1:  # labelled in the top panels
                fig.add_annotation(text=f"layer {layer}", x=start, xref=xref, y=1, yref=f"{yref} domain",
                                   xanchor="left", yanchor="top", showarrow=False, font=dict(size=10, color="#666"))
    return style_figure(fig, title, height=520, margin=dict(t=90))
