"""Attention tab: every head at once, one head large, the seed's four panels, per-query bars, statistics."""
import re
from typing import Optional

from explorer.callbacks.common import analyse, clamp_head, clamp_layer, clamp_query
from explorer.figures.attention import (
    attention_grid_figure,
    attention_head_figure,
    attention_steps_figure,
    query_attention_bars_figure,
)
from explorer.figures.common import figure_to_json
from explorer.figures.heads import head_statistics_table
from explorer.state.session import Session
from explorer.teaching import captions
from model_core.analysis import head_statistics


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
    caption = captions.chart_captions({
        "All heads": captions.grid_caption(stats),
        "Selected head": captions.attention_head_caption(pattern, a.labels, layer, head),
        "Where one query looks": captions.query_attention_caption(pattern, a.labels, query),
        "How the pattern is made": captions.attention_steps_caption(
            a.cache["attn_scores", layer][0, head].numpy(), pattern, a.labels)})
    return (attention_grid_figure(patterns, a.labels, selected=(layer, head)),
            attention_head_figure(pattern, a.labels, layer, head), steps,
            query_attention_bars_figure(pattern, a.labels, query), head_statistics_table(stats), caption)


def attention_page_view(session: Session, prompt: str, layer, head, query, drop_unknown: bool = False):
    """attention_view with the grid as figure JSON, for the clickable chart (explorer.tabs.live_plot)."""
    grid, *rest = attention_view(session, prompt, layer, head, query, drop_unknown)
    return (figure_to_json(grid), *rest)


HEAD_LABEL = re.compile(r"L(\d{1,3})·H(\d{1,3})")  # figures.common.head_label: the grid's trace names


def clicked_head(trace_name) -> Optional[tuple[int, int]]:
    """A clicked grid trace's name ("L1·H2") -> (layer, head); None for anything else."""
    match = HEAD_LABEL.fullmatch(trace_name) if isinstance(trace_name, str) else None
    return (int(match[1]), int(match[2])) if match else None
