"""Building blocks from the seed: activation functions and the effect of LayerNorm."""
import math

import numpy as np

from explorer.figures.common import RED, compact, histogram_pair_figure, lines_figure
from explorer.figures.plain import Figure

ACTIVATION_X = np.linspace(-4, 4, 161)


def activation_curves(x) -> dict[str, np.ndarray]:
    """The three non-linearities at x: ReLU, GELU (exact, with erf) and SiLU."""
    x = np.asarray(x, dtype=np.float64)
    erf = np.vectorize(math.erf)
    return {"ReLU": np.maximum(x, 0), "GELU": 0.5 * x * (1 + erf(x / math.sqrt(2))), "SiLU": x / (1 + np.exp(-x))}


def activation_functions_figure() -> Figure:
    """GELU vs ReLU vs SiLU on [-4, 4] in one panel."""
    series = list(activation_curves(ACTIVATION_X).items())
    fig = lines_figure(compact(ACTIVATION_X, 3), series, "Activation functions: ReLU vs GELU vs SiLU",
                       "input", "output", with_means=False)
    return fig.update_traces(mode="lines", line_width=3).update_yaxes(rangemode="normal", zeroline=True)


def layernorm_effect_figure(x_before, x_after, bins: int = 50, norm_name: str = "LayerNorm",
                            where: str = "") -> Figure:
    """Values [N] before / after a norm layer -> two histograms with mean and ±1 std lines.
    norm_name: LayerNorm or RMSNorm; where: e.g. "layer 0, before attention", added to the title."""
    panels, lines = [], []
    for name, values in ((f"Before {norm_name}", x_before), (f"After {norm_name}", x_after)):
        values = np.asarray(values, dtype=np.float64).ravel()
        counts, edges = np.histogram(values, bins=bins)
        mean, std = values.mean(), values.std()
        panels.append((counts, edges, f"{name}: mean {mean:.2f}, std {std:.2f}"))
        lines.append((mean, std))
    title = f"What {norm_name} does to the values{f' ({where})' if where else ''}: red mean, dashed ±1 std"
    fig = histogram_pair_figure(panels, title, "value")
    for col, (mean, std) in enumerate(lines, start=1):
        fig.add_vline(x=mean, line=dict(color=RED, width=2), row=1, col=col)
        for offset in (-std, std):
            fig.add_vline(x=mean + offset, line=dict(color="gray", width=1.5, dash="dash"), row=1, col=col)
    return fig
