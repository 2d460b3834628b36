"""Logit lens: what the model would predict if it stopped after each layer."""
import numpy as np

from explorer.figures.common import (
    MAGNITUDE_SCALE,
    SMALL_FONT,
    WIDE_CHART,
    compact,
    position_axis,
    stream_labels,
    style_figure,
)
from explorer.figures.plain import Figure, heatmap

MAX_CELL_TEXT_POSITIONS = 64  # beyond this, cells are too narrow for their token text


def top_k_hover_text(top_k_labels, top_k_probs) -> list[list[str]]:
    """labels [L+1, T, k] and probs [L+1, T, k] -> per-cell hover lines '1. e  62%<br>2. a  11%...'."""
    probs = np.asarray(top_k_probs, dtype=np.float64)
    return [
        ["<br>".join(f"{r + 1}. {top_k_labels[i][t][r]}  {probs[i, t, r]:.0%}" for r in range(probs.shape[2]))
         for t in range(probs.shape[1])]
        for i in range(probs.shape[0])
    ]


def logit_lens_figure(top_labels, top_probs, tokens: list[str], hover_text=None,
                      top_k_labels=None, top_k_probs=None, first_position: int = 0) -> Figure:
    """top_labels [L+1, T] (str) and top_probs [L+1, T] -> heatmap of the top-1 guess after each layer.

    Colour = top-1 probability (0..1); cell text = the guessed token (T ≤ 64); hover = top-k list, taken
    from hover_text [L+1][T] or built from top_k_labels / top_k_probs [L+1, T, k]."""
    probs = compact(top_probs, 3)
    n_rows, n_pos = probs.shape
    if hover_text is None and top_k_labels is not None and top_k_probs is not None:
        hover_text = top_k_hover_text(top_k_labels, top_k_probs)
    rows = stream_labels(n_rows - 1)
    rows[-1] += " (final)"
    positions = [f"{first_position + i}:{t}" for i, t in enumerate(tokens)]
    fig = Figure(heatmap(
        z=probs, x=positions, y=rows, zmin=0, zmax=1,
        colorscale=MAGNITUDE_SCALE,
        colorbar=dict(title=dict(text="top-1 probability", side="right")),
        text=np.asarray(top_labels, dtype=object).tolist(), customdata=hover_text,
        texttemplate="%{text}" if n_pos <= MAX_CELL_TEXT_POSITIONS else None, textfont=dict(size=SMALL_FONT),
        hovertemplate="%{y} · position %{x}<br>"
        + ("%{customdata}" if hover_text is not None else "top-1 %{text}  %{z:.0%}") + "<extra></extra>",
    ))
    fig.update_xaxes(**position_axis("position (predicting the next token)"))
    fig.update_yaxes(title_text="decoded after", type="category", autorange="reversed")
    title = "Logit lens: the top next-token guess after each layer"
    return style_figure(fig, title, height=170 + 42 * n_rows, chart_width=WIDE_CHART, margin=dict(l=130, b=90))
