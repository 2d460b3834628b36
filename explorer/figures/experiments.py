"""Experiments: loss per position before/after an ablation, the next-token distribution before/after, and
the importance map (validation-loss increase per knocked-out head and FFN layer). numpy in, Plotly out."""
import numpy as np

from explorer.figures.common import (
    BLUE,
    DIVERGING_SCALE,
    GREY,
    ORANGE,
    RED,
    SMALL_FONT,
    WIDE_CHART,
    compact,
    position_axis,
    style_figure,
    symmetric_range,
    top_legend,
    unique_labels,
)
from explorer.figures.plain import Figure, bar, heatmap, scatter, subplots

BEFORE, AFTER = "intact model", "with the ablation"


def loss_change_figure(before, after, targets: list[str]) -> Figure:
    """Loss [T-1] at each predicted token before/after, and below it the difference (red: harder now).
    targets: the predicted tokens as position:token labels (positions 1 to T-1 of the prompt)."""
    before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    diff = after - before
    x = list(targets)
    fig = subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.6, 0.4], vertical_spacing=0.06)
    for name, values, color in ((BEFORE, before, BLUE), (AFTER, after, ORANGE)):
        fig.add_trace(scatter(
            x=x, y=compact(values), name=f"{name} (mean {values.mean():.2f})", mode="lines+markers",
            line=dict(color=color), hovertemplate=f"{name}<br>predicting %{{x}}<br>loss %{{y:.2f}} nats<extra></extra>",
        ), row=1, col=1)
    fig.add_trace(bar(
        x=x, y=compact(diff), name="difference (after − before)", marker_color=[RED if d > 0 else BLUE for d in diff],
        hovertemplate="predicting %{x}<br>loss change %{y:+.2f} nats<extra></extra>",
    ), row=2, col=1)
    fig.update_yaxes(title_text="loss (nats)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="after − before", zeroline=True, zerolinecolor="#888", row=2, col=1)
    fig.update_xaxes(**position_axis("predicted token (position:token)"), row=2, col=1)
    fig.update_xaxes(type="category", row=1, col=1)
    return style_figure(fig, "Loss at each position of the prompt: which tokens got harder to predict", 560,
                        chart_width=WIDE_CHART, legend=top_legend(), margin=dict(t=100, b=90))


def next_token_change_figure(probs_before, probs_after, vocab: list[str], where: str, top_n: int = 15) -> Figure:
    """[V] next-token probabilities before/after: grouped bars over the top_n tokens of either."""
    before, after = np.asarray(probs_before, dtype=np.float64), np.asarray(probs_after, dtype=np.float64)
    order = np.argsort(-np.maximum(before, after), kind="stable")[:top_n]
    labels = unique_labels(list(vocab))
    names = [labels[i] for i in order]
    fig = Figure([
        bar(x=names, y=compact(before[order]), name=BEFORE, marker_color=BLUE,
               hovertemplate=f"%{{x}}<br>{BEFORE}: %{{y:.1%}}<extra></extra>"),
        bar(x=names, y=compact(after[order]), name=AFTER, marker_color=ORANGE,
               hovertemplate=f"%{{x}}<br>{AFTER}: %{{y:.1%}}<extra></extra>"),
    ])
    fig.update_xaxes(title_text="next token (most likely in either first)", type="category")
    fig.update_yaxes(title_text="probability", tickformat=".0%", rangemode="tozero")
    return style_figure(fig, f"Next-token probabilities {where}", 420, barmode="group", bargap=0.25,
                        legend=top_legend(), margin=dict(t=100, b=70))


def importance_figure(head_increase, mlp_increase=None, mode: str = "mean") -> Figure:
    """Heatmap [layer, head] of the validation-loss increase when that head alone is knocked out, and beside
    it one bar per FFN layer (when the model has FFNs). Red: the loss rises; white: no change."""
    heads = np.asarray(head_increase, dtype=np.float64)
    n_layers, n_heads = heads.shape
    layers = [f"layer {layer}" for layer in range(n_layers)]
    has_mlp = mlp_increase is not None
    titles = ["each head alone", "each FFN layer alone"][:1 + has_mlp]
    fig = subplots(rows=1, cols=2 if has_mlp else 1, column_widths=[0.68, 0.32] if has_mlp else None,
                        horizontal_spacing=0.14, subplot_titles=titles)
    reach = symmetric_range(heads)
    fig.add_trace(heatmap(
        z=compact(heads), x=[f"head {h}" for h in range(n_heads)], y=layers, zmin=-reach, zmax=reach,
        colorscale=DIVERGING_SCALE, text=[[f"{v:+.3f}" for v in row] for row in heads], texttemplate="%{text}",
        textfont=dict(size=SMALL_FONT), hovertemplate="%{y} · %{x}<br>loss change %{z:+.3f} nats<extra></extra>",
        colorbar=dict(title=dict(text="loss change", side="right"), thickness=14, x=0.6 if has_mlp else 1.02),
    ), row=1, col=1)
    if has_mlp:
        mlp = np.asarray(mlp_increase, dtype=np.float64)
        fig.add_trace(bar(
            x=compact(mlp), y=layers, orientation="h", marker_color=[RED if v > 0 else GREY for v in mlp],
            text=[f"{v:+.2f}" for v in mlp], textposition="auto", showlegend=False,
            hovertemplate="FFN of %{y}<br>loss change %{x:+.3f} nats<extra></extra>",
        ), row=1, col=2)
        fig.update_xaxes(title_text="loss change (nats)", row=1, col=2)
        fig.update_yaxes(autorange="reversed", row=1, col=2)
    fig.update_yaxes(autorange="reversed", row=1, col=1)  # layer 0 on top, as the model reads
    what = "replaced by its mean" if mode == "mean" else "set to zero"
    height = max(320, 120 + 60 * n_layers)
    return style_figure(fig, f"Importance map: validation-loss change when one unit is {what}", height,
                        margin=dict(t=90, l=90))
