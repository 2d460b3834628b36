"""Attention tab: every head at once, one head large, the seed's four panels, per-query bars, statistics."""
import re
from typing import Optional

from explorer.callbacks.common import all_layers, analyse, clamp_head, clamp_layer, clamp_query, layer_names
from explorer.figures.attention import (
    attention_grid_figure,
    attention_head_figure,
    attention_overview_figure,
    attention_steps_figure,
    query_attention_bars_figure,
)
from explorer.figures.common import figure_to_json, note_figure
from explorer.figures.heads import head_statistics_table
from explorer.state.session import Session
from explorer.teaching import captions, captions_roles
from model_core.analysis import head_statistics
from model_core.analysis.roles import prompt_roles
from model_core.analysis.scale import is_large


def attention_view(session: Session, prompt: str, layer, head, query, drop_unknown: bool = False):
    """-> grid, head, steps, bars figures, head-statistics rows, caption markdown. A large model's grid is an
    overview of every head and the selected layer's heads (attention_overview_figure)."""
    layer, head = clamp_layer(session, layer), clamp_head(session, head)
    n_layers = session.inspected.config.n_layers
    a = analyse(session, prompt, drop_unknown, names=all_layers(n_layers, "pattern") + layer_names(
        layer, "attn_scores_unmasked", "attn_scores", "z"))
    query = clamp_query(query, len(a.ids))
    patterns = a.cache.stack("pattern")[:, 0].float().numpy()  # [L, H, T, T]
    stats = head_statistics(patterns)
    pattern = patterns[layer, head]
    steps, scores = steps_of(a, pattern, layer, head)
    large = is_large(session.inspected.config)
    grid = (attention_overview_figure(stats, patterns[layer], a.labels, (layer, head)) if large
            else attention_grid_figure(patterns, a.labels, selected=(layer, head)))
    roles, role_scores = prompt_roles(patterns, a.ids)
    n_heads = session.inspected.config.n_heads
    big, bars = attention_head_figure(pattern, a.labels, layer, head), query_attention_bars_figure(pattern, a.labels,
                                                                                                   query)
    keys, queries = {"xaxis": "key position"}, {"yaxis": "query position"}
    caption = captions.chart_captions({
        "All heads": captions_roles.prompt_roles_caption(roles, role_scores)
        + (" " + captions.overview_caption(stats, layer) if large else ""),
        "Selected head": captions_roles.head_on_prompt_caption(roles[layer * n_heads + head], role_scores, len(a.ids))
        + captions.labels_shown(big, {**keys, **queries}),
        "Where one query looks": captions.query_attention_caption(pattern, a.labels, query)
        + captions.labels_shown(bars, keys),
        "How the pattern is made": (captions.attention_steps_caption(scores[1], pattern, a.labels)
                                    + captions.labels_shown(steps, {**queries, "xaxis": "key position of the three "
                                                                    "narrow score panels"})) if scores else ""})
    return grid, big, steps, bars, head_statistics_table(stats), caption


STEPS = ("attn_scores_unmasked", "attn_scores", "z")


def steps_of(a, pattern, layer: int, head: int):
    """-> (the seed's four panels of one head, [unmasked, masked scores]); a model read from its own forward pass
    that does not show its scores before the mask, or its values, gets a panel saying so and no scores."""
    if not all((name, layer) in a.cache for name in STEPS):
        return note_figure("This model's code does not show its scores before the mask and its weighted values "
                           "separately, so only its pattern is drawn.", "How the pattern is made"), None
    scores = [a.cache[name, layer][0, head].float().numpy() for name in STEPS[:2]]
    return attention_steps_figure(*scores, pattern, a.cache["z", layer][0, :, head].float().numpy(), a.labels,
                                  layer, head), scores


def attention_page_view(session: Session, prompt: str, layer, head, query, drop_unknown: bool = False):
    """attention_view with the grid as figure JSON, for the clickable chart (explorer.tabs.live_plot)."""
    grid, *rest = attention_view(session, prompt, layer, head, query, drop_unknown)
    return (figure_to_json(grid), *rest)


HEAD_LABEL = re.compile(r"L(\d{1,3})·H(\d{1,3})")  # figures.common.head_label: the grid's trace names
ROW_LABEL, COLUMN_LABEL = re.compile(r"L(\d{1,3})"), re.compile(r"H(\d{1,3})")  # the overview's axes


def clicked_head(trace_name, x=None, y=None) -> Optional[tuple[int, int]]:
    """A clicked grid trace's name ("L1·H2"), or a clicked overview cell (x "H2", y "L1") -> (layer, head);
    None for anything else."""
    match = HEAD_LABEL.fullmatch(trace_name) if isinstance(trace_name, str) else None
    if match:
        return int(match[1]), int(match[2])
    row = ROW_LABEL.fullmatch(y) if isinstance(y, str) else None
    column = COLUMN_LABEL.fullmatch(x) if isinstance(x, str) else None
    return (int(row[1]), int(column[1])) if row and column else None
