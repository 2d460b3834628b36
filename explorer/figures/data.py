"""Data: how a text becomes a sequence of token ids."""
import numpy as np

from explorer.figures.common import BLUE, index_labels, position_axis, style_figure
from explorer.figures.plain import Figure, bar


def token_index_figure(ids, labels: list[str]) -> Figure:
    """ids [N] token ids and labels [N] readable tokens -> one bar per position, height = token id."""
    ids = np.asarray(ids, dtype=np.int64)
    fig = Figure(bar(x=index_labels(labels), y=ids, marker_color=BLUE,
                           hovertemplate="position %{x}<br>token id %{y}<extra></extra>"))
    fig.update_xaxes(**position_axis("position:token"))
    fig.update_yaxes(title_text="token id", rangemode="tozero")
    return style_figure(fig, "Token indices over the sequence", height=380, margin=dict(b=90))
