"""Attention tab: every head at once, one head large, the seed's four panels, per-query bars, statistics."""
from model_core.analysis import head_statistics

from .. import captions
from ..figures.attention import (attention_grid_figure, attention_head_figure, attention_steps_figure,
                                 query_attention_bars_figure)
from ..figures.heads import head_statistics_table
from ..session import Session
from .common import analyse, clamp_head, clamp_layer, clamp_query


def attention_view(session: Session, prompt: str, layer, head, query, drop_unknown: bool = False):
    """-> grid, head, steps, bars figures, head-statistics rows, caption markdown."""
    layer, head = clamp_layer(session, layer), clamp_head(session, head)
    a = analyse(session, prompt, drop_unknown)
    query = clamp_query(query, len(a.ids))
    patterns = a.cache.stack("pattern")[:, 0].numpy()  # [L, H, T, T]
    stats = head_statistics(patterns)
    pattern = patterns[layer, head]
    steps = attention_steps_figure(
        a.cache["attn_scores_unmasked", layer][0, head].numpy(), a.cache["attn_scores", layer][0, head].numpy(),
        pattern, a.cache["z", layer][0, :, head].numpy(), a.labels, layer, head)
    caption = " ".join([captions.attention_head_caption(pattern, a.labels, layer, head),
                        captions.grid_caption(stats)])
    return (attention_grid_figure(patterns, a.labels, selected=(layer, head)),
            attention_head_figure(pattern, a.labels, layer, head), steps,
            query_attention_bars_figure(pattern, a.labels, query), head_statistics_table(stats), caption)
