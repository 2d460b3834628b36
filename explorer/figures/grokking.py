"""The grokking lab's figures (a model of a + b mod p): the embedding's norm per frequency, an FFN neuron's
activation over every (a, b), the logits in the 2-D Fourier basis, and the losses over training with the three
phases (memorise, build the circuit, clean up)."""
import numpy as np

from explorer.figures.common import (
    BAND_ROW_PX,
    BLUE,
    GREY,
    MAGNITUDE_SCALE,
    ORANGE,
    PURPLE,
    RED,
    UNIT_RANGE,
    WIDE_CHART,
    band_label_places,
    compact,
    labelled_rows_height,
    style_figure,
    top_legend,
)
from explorer.figures.plain import Figure, bar, heatmap, scatter

PHASE_COLOURS = ("rgba(31,119,180,0.08)", "rgba(255,127,14,0.10)", "rgba(44,160,44,0.10)")
PHASE_NAME_COLOURS = ("rgba(31,119,180,0.25)", "rgba(255,127,14,0.25)", "rgba(44,160,44,0.25)")  # their names' boxes


def frequency_norms_figure(norms, key_frequencies: list) -> Figure:
    """norms [K + 1] per frequency (0: constant, left out) -> bars, the key frequencies in red."""
    k = np.arange(1, len(norms))
    colours = [RED if int(f) in key_frequencies else GREY for f in k]
    fig = Figure(bar(x=k, y=compact(norms[1:], 4), marker=dict(color=colours),
                     hovertemplate="frequency %{x}<br>norm %{y:.3f}<extra></extra>"))
    # every frequency labelled up to 30 bars; beyond, every fifth and each key frequency
    ticks = k if len(k) <= 30 else sorted({int(f) for f in k if f % 5 == 0} | {int(f) for f in key_frequencies})
    fig.update_xaxes(title_text="frequency k (cos and sin of 2πk·a/p)", tickmode="array", tickvals=list(ticks))
    fig.update_yaxes(title_text="norm of the embedding at k")
    return style_figure(fig, "The number embedding in the Fourier basis (key frequencies in red)", height=360,
                        showlegend=False)


def neuron_map_figure(values, neuron: int, frequency: int) -> Figure:
    """values [p, p] one neuron's activation at '=' for every (a, b)."""
    p = values.shape[0]
    fig = Figure(heatmap(z=compact(values, 3), x=np.arange(p), y=np.arange(p), colorscale=MAGNITUDE_SCALE,
                         colorbar=dict(title=dict(text="activation", side="right"), thickness=14),
                         hovertemplate="a %{y}, b %{x}<br>activation %{z:.3f}<extra></extra>"))
    fig.update_xaxes(title_text="b", constrain="domain")
    fig.update_yaxes(title_text="a", autorange="reversed", scaleanchor="x")
    return style_figure(fig, f"FFN neuron {neuron} on every prompt 'a b =' (mostly frequency {frequency})",
                        height=460)


def strongest_rows(norms: np.ndarray, n: int) -> list[int]:
    """Of a [p, p] pair_fourier_norms, the constant row and the n - 1 other basis rows carrying the most of it (as a
    component of a or of b), in basis order: the part of the transform worth drawing when all p rows are too many."""
    norms = np.where(np.isfinite(norms), np.asarray(norms, dtype=np.float64), 0.0)
    weight = norms.sum(0) + norms.sum(1)  # [p] each row's share as a component of b and of a
    others = [int(i) for i in np.argsort(-weight[1:], kind="stable")[: max(0, n - 1)] + 1]
    return sorted([0, *others])


def logit_fourier_figure(norms, labels: list[str], shown: int = 24) -> Figure:
    """norms [p, p] of the logits' 2-D Fourier transform over (a, b) -> heatmap of the constant and the `shown` - 1
    basis rows of a and of b that carry the most (the rest are in the exported data)."""
    rows = strongest_rows(norms, min(shown, len(labels)))
    n, names = len(rows), [labels[i] for i in rows]
    fig = Figure(heatmap(z=compact(np.asarray(norms)[np.ix_(rows, rows)], 3), x=names, y=names,
                         colorscale=MAGNITUDE_SCALE,
                         colorbar=dict(title=dict(text="norm", side="right"), thickness=14),
                         hovertemplate="a: %{y}, b: %{x}<br>norm %{z:.2f}<extra></extra>"))
    fig.update_xaxes(title_text="Fourier component of b", type="category")
    fig.update_yaxes(title_text="Fourier component of a", type="category", autorange="reversed")
    return style_figure(fig, "The logits in the Fourier basis of a and b (norm over the answers)",
                        height=max(520, labelled_rows_height(n, names)), chart_width=WIDE_CHART)


def phase_curves_figure(steps, curves: dict, phases: list) -> Figure:
    """curves {name: [S] losses} over steps on a log axis; phases [(start, end, name)] shaded behind."""
    colours = {"train loss": BLUE, "test loss": ORANGE, "restricted loss": PURPLE, "excluded loss": RED}
    fig = Figure()
    for name, values in curves.items():
        values = np.clip(np.asarray(values, dtype=np.float32), 1e-7, None)  # not rounded: a log axis reaches 1e-7
        fig.add_trace(scatter(x=list(steps), y=values, mode="lines", name=name,
                              line=dict(color=colours.get(name, GREY), width=2,
                                        dash="dot" if name in ("restricted loss", "excluded loss") else "solid"),
                              hovertemplate=f"step %{{x}}<br>{name} %{{y:.4g}}<extra></extra>"))
    # each name above the plot (over the curves, as before, they were hard to read), at its band's start, a row
    # higher where it would overlap one before it (memorising takes 50 steps of 3,000)
    places = band_label_places(phases, (min(steps), max(steps))) if len(steps) else []
    for (start, end, name), colour, box, (left, row) in zip(phases, PHASE_COLOURS, PHASE_NAME_COLOURS, places):
        fig.add_vrect(x0=start, x1=end, fillcolor=colour, line_width=0)
        fig.add_annotation(text=name, x=left, xref="x domain", xanchor="left", y=1, yref="y domain",
                           yanchor="bottom", yshift=2 + BAND_ROW_PX * row, showarrow=False, bgcolor=box)
    band = BAND_ROW_PX * (1 + max((row for _, row in places), default=-1))  # px of name rows above the plot
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(title_text="loss (log scale)", type="log", exponentformat="power")  # 10⁻⁵, not "10µ"
    legend = {**top_legend(), "y": 1 + (band + 4) / PHASE_PLOT_PX}  # above the names
    return style_figure(fig, "Losses over training: memorise, build the circuit, clean up", height=PHASE_HEIGHT + band,
                        legend=legend, margin=dict(t=PHASE_TOP + band, b=PHASE_BOTTOM))


PHASE_HEIGHT, PHASE_TOP, PHASE_BOTTOM = 420, 110, 50  # the loss chart without phase names: its plot PHASE_PLOT_PX high
PHASE_PLOT_PX = PHASE_HEIGHT - PHASE_TOP - PHASE_BOTTOM


def accuracy_figure(steps, train_acc, test_acc) -> Figure:
    fig = Figure()
    for name, values, colour in (("train accuracy", train_acc, BLUE), ("test accuracy", test_acc, ORANGE)):
        fig.add_trace(scatter(x=list(steps), y=compact(values, 4), mode="lines", name=name, line=dict(color=colour),
                              hovertemplate=f"step %{{x}}<br>{name} %{{y:.1%}}<extra></extra>"))
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(title_text="accuracy", range=UNIT_RANGE, tickformat=".0%")  # a line at 0 stays in view
    return style_figure(fig, "Accuracy on the training pairs and on the pairs never trained on", height=360,
                        legend=top_legend(), margin=dict(t=100))

