"""Training: loss curves (the Train tab redraws this live with Plotly.react)."""

from explorer.figures.common import BLUE, ORANGE, compact, style_figure, top_legend
from explorer.figures.plain import Figure, scatter


def loss_figure(steps, train_loss, eval_steps=None, val_loss=None, eval_train_loss=None) -> Figure:
    """Per-step train loss (light) and, at evaluation steps, train and validation loss (bold)."""
    fig = Figure(scatter(
        x=list(steps), y=compact(train_loss), mode="lines", name="train loss (each batch)",
        line=dict(color=BLUE, width=1), opacity=0.35, hovertemplate="step %{x}<br>batch loss %{y:.3f}<extra></extra>"))
    curves = [("train loss (evaluated)", eval_train_loss, BLUE), ("validation loss", val_loss, ORANGE)]
    for name, values, color in curves:
        if eval_steps is not None and values is not None and len(values):
            fig.add_trace(scatter(
                x=list(eval_steps), y=compact(values), mode="lines+markers", name=name,
                line=dict(color=color, width=3), hovertemplate=f"step %{{x}}<br>{name} %{{y:.3f}}<extra></extra>"))
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(title_text="cross-entropy loss")
    return style_figure(fig, "Training and validation loss", height=400, legend=top_legend(), margin=dict(t=90))
