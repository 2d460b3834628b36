"""Training: loss curves (the Train tab redraws this live with Plotly.react)."""

from explorer.figures.common import BLUE, ORANGE, compact, faded, style_figure, top_legend
from explorer.figures.plain import Figure, scatter


def evaluated_loss_traces(eval_steps, val_loss=None, eval_train_loss=None) -> list:
    """The bold curves: train and validation loss at the evaluation steps (a curve without values is left out)."""
    curves = [("train loss (evaluated)", eval_train_loss, BLUE), ("validation loss", val_loss, ORANGE)]
    return [scatter(x=list(eval_steps), y=compact(values), mode="lines+markers", name=name,
                    line=dict(color=color, width=3), hovertemplate=f"step %{{x}}<br>{name} %{{y:.3f}}<extra></extra>")
            for name, values, color in curves if eval_steps is not None and values is not None and len(values)]


def loss_figure(steps, train_loss, eval_steps=None, val_loss=None, eval_train_loss=None, previous=None) -> Figure:
    """Per-step train loss (light) and, at evaluation steps, train and validation loss (bold). previous: (legend
    label, eval steps, val loss or None, evaluated train loss) of an earlier run, drawn faded for comparison."""
    earlier = faded(evaluated_loss_traces(*previous[1:]), previous[0]) if previous else []
    per_step = scatter(
        x=list(steps), y=compact(train_loss), mode="lines", name="train loss (each batch)",
        line=dict(color=BLUE, width=1), opacity=0.35, hovertemplate="step %{x}<br>batch loss %{y:.3f}<extra></extra>")
    fig = Figure([*earlier, per_step, *evaluated_loss_traces(eval_steps, val_loss, eval_train_loss)])
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(title_text="cross-entropy loss")
    return style_figure(fig, "Training and validation loss", height=400, legend=top_legend(), margin=dict(t=90))
