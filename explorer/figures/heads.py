"""Per-head statistics: a sortable table and a compact L×H overview of what each head looks at."""
import numpy as np

from explorer.common.controls import HEAD_TABLE_COLUMNS, HEAD_TABLE_HEADERS  # noqa: F401  (HEADERS: the rows fit them)
from explorer.figures.common import attention_coloraxis, compact, head_label, style_figure
from explorer.figures.plain import Figure, heatmap, subplots

# the three "where does it look" shares drawn by head_statistics_figure
OVERVIEW_PANELS = (("prev_token", "previous token"), ("self", "itself"), ("first_token", "first token (sink)"))


def head_statistics_table(stats: dict[str, np.ndarray]) -> list[list]:
    """{stat: [L, H]} -> one row per head for a gr.Dataframe with HEAD_TABLE_HEADERS, rounded to 3 decimals."""
    n_layers, n_heads = np.shape(stats["entropy"])
    return [
        [head_label(layer, head)] + [round(float(stats[key][layer, head]), 3) for key, _ in HEAD_TABLE_COLUMNS]
        for layer in range(n_layers) for head in range(n_heads)
    ]


def head_statistics_figure(stats: dict[str, np.ndarray]) -> Figure:
    """{stat: [L, H]} -> three L×H heatmaps (share on previous token / itself / first token), 0..1, with % text."""
    n_layers, n_heads = np.shape(stats["prev_token"])
    fig = subplots(rows=1, cols=len(OVERVIEW_PANELS), subplot_titles=[t for _, t in OVERVIEW_PANELS],
                        horizontal_spacing=0.06)
    rows, cols = [f"L{layer}" for layer in range(n_layers)], [f"H{head}" for head in range(n_heads)]
    for col, (key, title) in enumerate(OVERVIEW_PANELS, start=1):
        fig.add_trace(heatmap(
            z=compact(stats[key], 3), x=cols, y=rows, coloraxis="coloraxis", texttemplate="%{z:.0%}",
            hovertemplate=f"%{{y}}·%{{x}}<br>attention on {title}: %{{z:.0%}}<extra></extra>",
        ), row=1, col=col)
    fig.update_yaxes(autorange="reversed", type="category", title_text="layer", col=1)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", title_text="head")
    title = "What each head looks at (average share of attention, queries ≥ 1)"
    return style_figure(fig, title, height=150 + 45 * n_layers, coloraxis=attention_coloraxis(),
                        margin=dict(t=90, b=60))
