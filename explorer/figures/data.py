"""Data: how a text becomes a sequence of token ids."""
import numpy as np

from explorer.figures.common import BLUE, ORANGE, WIDE_CHART, index_labels, position_axis, style_figure
from explorer.figures.plain import Figure, bar


def token_index_figure(ids, labels: list[str], examples=None) -> Figure:
    """ids [N] token ids and labels [N] readable tokens -> one bar per position, height = token id. examples [N]:
    which example each token belongs to (a task's examples side by side, in alternating colours)."""
    ids = np.asarray(ids, dtype=np.int64)
    if examples is None:
        colour, hover, title = BLUE, "position %{x}<br>token id %{y}<extra></extra>", "Token indices over the sequence"
    else:
        colour = [BLUE if k % 2 == 0 else ORANGE for k in examples]
        hover = "example %{customdata}<br>position %{x}<br>token id %{y}<extra></extra>"
        title = f"Token indices of the first {int(examples[-1]) + 1} examples, one after another (colour: example)"
    fig = Figure(bar(x=index_labels(labels), y=ids, marker_color=colour, hovertemplate=hover,
                     customdata=None if examples is None else [int(k) + 1 for k in examples]))
    fig.update_xaxes(**position_axis("position:token"))
    fig.update_yaxes(title_text="token id", rangemode="tozero")
    return style_figure(fig, title, height=380, chart_width=WIDE_CHART, margin=dict(b=90))
