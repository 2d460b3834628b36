"""The teacher page's figure: every run's loss curve as small multiples on one shared step axis and one shared
loss axis, so runs are compared by eye (a curve above its neighbours learned less)."""
import math
from html import escape

from explorer.figures.common import BLUE, FONT_SIZE, ORANGE, SMALL_FONT, compact, style_figure
from explorer.figures.plain import Figure, scatter

CELL_HEIGHT = 170  # pixels per row of cells
GAP_X, GAP_Y = 0.025, 0.12  # space between cells, as a share of one cell


def class_loss_figure(curves: list[dict], columns: int = 5) -> Figure:
    """curves [{name, steps, loss, val_steps, val_loss}] -> one cell per run, the student's name above it; batch
    loss thin blue, validation loss orange dots."""
    cols = max(1, min(columns, len(curves)))
    rows = max(1, math.ceil(len(curves) / cols))
    fig = Figure()
    for i, curve in enumerate(curves):
        x, y = _cell_axes(fig, i, len(curves), cols)
        name = escape(curve["name"], quote=False)  # a student's name is text: Plotly reads <b> and <a> in labels
        fig.add_trace(scatter(x=curve["steps"], y=compact(curve["loss"]), mode="lines", xaxis=x, yaxis=y,
                              line=dict(color=BLUE, width=1.2), name=curve["name"], showlegend=False,
                              hovertemplate=f"{name}<br>step %{{x}}<br>batch loss %{{y:.3f}}<extra></extra>"))
        if len(curve["val_steps"]):
            fig.add_trace(scatter(x=curve["val_steps"], y=compact(curve["val_loss"]), mode="markers", xaxis=x,
                                  yaxis=y, marker=dict(color=ORANGE, size=6), name=f"{curve['name']} (validation)",
                                  showlegend=False, hovertemplate=f"{name}<br>step %{{x}}<br>validation "
                                                                  "loss %{y:.3f}<extra></extra>"))
        fig.add_annotation(text=f"<b>{name}</b>", x=0.5, y=1.0, xref=f"{x} domain", yref=f"{y} domain",
                           xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=FONT_SIZE - 1))
    title = "Every run's loss (shared axes; blue: each batch, orange: validation)"
    return style_figure(fig, title, height=rows * CELL_HEIGHT + 90, margin=dict(l=60, r=20, t=70, b=50),
                        font=dict(size=SMALL_FONT + 1))


def _cell_axes(fig: Figure, i: int, n: int, cols: int) -> tuple[str, str]:
    """Lay out cell i of n (left to right, top to bottom) -> its x and y axis refs. Every axis matches the first
    cell's, so zooming one zooms all; x tick labels only where no cell is below, y tick labels in the left column."""
    rows = math.ceil(n / cols)
    row, col = divmod(i, cols)
    suffix = "" if i == 0 else str(i + 1)
    width, height = 1 / cols, 1 / rows
    top = 1 - row * height
    xaxis = dict(domain=[(col + GAP_X) * width, (col + 1 - GAP_X) * width], anchor=f"y{suffix}",
                 showticklabels=i + cols >= n)
    yaxis = dict(domain=[top - (1 - GAP_Y) * height, top - GAP_Y * height], anchor=f"x{suffix}",
                 showticklabels=col == 0)
    if i:
        xaxis["matches"], yaxis["matches"] = "x", "y"
    if col == 0 and i + cols >= n:  # the bottom-left cell names the axes
        xaxis["title_text"], yaxis["title_text"] = "step", "loss"
    fig.update_layout({f"xaxis{suffix}": xaxis, f"yaxis{suffix}": yaxis})
    return f"x{suffix}", f"y{suffix}"
