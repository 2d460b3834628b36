"""Residual stream: how its size evolves across layers, how big each layer's updates are, the stream itself."""
import numpy as np

from explorer.figures.common import (
    DIVERGING_SCALE,
    MAGNITUDE_SCALE,
    WIDE_CHART,
    compact,
    index_labels,
    lines_figure,
    position_axis,
    position_lines_figure,
    stream_labels,
    style_figure,
    symmetric_range,
)
from explorer.figures.plain import Figure, heatmap

MAX_FULL_TICKS = 40  # position ticks along the flattened (position × d_model) axis


def residual_norms_figure(resid_pre, resid_mid, resid_post) -> Figure:
    """[L, T] L2 norms per layer and position -> mean norm before / mid / after each layer (x = layer)."""
    series = [
        ("before the layer", np.mean(resid_pre, axis=1)),
        ("after attention", np.mean(resid_mid, axis=1)),
        ("after the layer (attention + FFN)", np.mean(resid_post, axis=1)),
    ]
    fig = lines_figure(np.arange(len(series[0][1])), series, "Residual stream size across layers",
                       "layer", "mean L2 norm over positions", with_means=False)
    return fig.update_xaxes(dtick=1)


def update_norms_figure(attn_out, mlp_out) -> Figure:
    """[L, T] norms of what attention and the FFN add to the stream -> mean per layer, one line each."""
    series = [("attention update", np.mean(attn_out, axis=1)), ("FFN update", np.mean(mlp_out, axis=1))]
    fig = lines_figure(np.arange(len(series[0][1])), series, "Update size per layer (what each block adds)",
                       "layer", "mean L2 norm over positions", with_means=False)
    return fig.update_xaxes(dtick=1)


def update_vs_residual_figure(update, residual, tokens: list[str], layer: int) -> Figure:
    """[T] norms per position -> attention update vs the residual it is added to, means in the legend."""
    series = [("attention update", update), ("residual stream", residual)]
    return position_lines_figure(series, tokens, f"Layer {layer} · attention update vs residual norm", "L2 norm")


def variance_figure(resid_var, attn_var, tokens: list[str], layer: int) -> Figure:
    """[T] variance across d_model per position -> residual vs attention output, means in the legend."""
    series = [("residual (attention input)", resid_var), ("attention output", attn_var)]
    return position_lines_figure(series, tokens, f"Layer {layer} · variance of residual vs attention output",
                                 "variance across d_model")


def residual_heatmap_figure(stream, tokens: list[str], mode: str = "norm") -> Figure:
    """stream [L+1, T, D] -> snapshots (embed, after L0, ...) × positions, coloured by norm ('norm')
    or every value laid out as position × d_model ('full', as in the seed; diverging, centred at 0)."""
    if mode not in ("norm", "full"):
        raise ValueError(f"mode must be 'norm' or 'full', not {mode!r}")
    stream = np.asarray(stream, dtype=np.float32)
    rows, labels = stream_labels(stream.shape[0] - 1), index_labels(tokens)
    if mode == "norm":
        norms = compact(np.linalg.norm(stream, axis=-1), 3)  # [L+1, T]
        fig = Figure(heatmap(
            z=norms, x=labels, y=rows, colorscale=MAGNITUDE_SCALE, zmin=0, zmax=float(norms.max()) or 1.0,
            colorbar=dict(title=dict(text="L2 norm", side="right")),
            hovertemplate="%{y} · position %{x}<br>norm %{z:.3f}<extra></extra>"))
        fig.update_xaxes(**position_axis())
        title = "Residual stream size at every layer and position"
    else:
        fig = _full_stream_heatmap(stream, rows, labels)
        title = "Residual stream values across layers (each block of columns = one position's d_model values)"
    fig.update_yaxes(title_text="residual stream", type="category", autorange="reversed")
    return style_figure(fig, title, height=160 + 45 * len(rows), chart_width=WIDE_CHART, margin=dict(l=100, b=80))


def _full_stream_heatmap(stream: np.ndarray, rows: list[str], labels: list[str]) -> Figure:
    """[L+1, T, D] -> one heatmap of shape [L+1, T·D] with ticks at each (shown) position's block."""
    n_rows, n_pos, d_model = stream.shape
    flat = compact(stream.reshape(n_rows, n_pos * d_model), 3)
    half = symmetric_range(flat)
    shown = range(0, n_pos, max(1, int(np.ceil(n_pos / MAX_FULL_TICKS))))
    fig = Figure(heatmap(
        z=flat, y=rows, colorscale=DIVERGING_SCALE, zmid=0, zmin=-half, zmax=half,
        colorbar=dict(title=dict(text="value", side="right")),
        hovertemplate=f"%{{y}}<br>column %{{x}} (position = column // {d_model})<br>value %{{z:.3f}}<extra></extra>"))
    fig.update_xaxes(title_text=f"position × d_model ({d_model} columns per position)",
                     tickvals=[p * d_model + d_model / 2 for p in shown], ticktext=[labels[p] for p in shown])
    return fig
