"""Two models side by side on one text: bits per character along the text, each model's next-token guess, and
both models' attention grids."""
import re

import numpy as np

from explorer.figures.attention import attention_grid_figure
from explorer.figures.common import (
    BLUE,
    GREEN,
    PURPLE,
    RED,
    WIDE_CHART,
    compact,
    position_axis,
    style_figure,
    top_legend,
    unique_labels,
)
from explorer.figures.plain import Figure, bar, scatter, subplots


def character_bits_figure(bits_a, bits_b, positions: list[str], name_a: str, name_b: str) -> Figure:
    """Bits [n] each model spends on each character of the text (positions: 'index:character' labels), and
    below, B − A (red: B finds it harder; purple: B predicts it better)."""
    a, b = np.asarray(bits_a, dtype=np.float64), np.asarray(bits_b, dtype=np.float64)
    x = list(positions)
    fig = subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.6, 0.4], vertical_spacing=0.06)
    for name, values, color in ((f"A: {name_a}", a, BLUE), (f"B: {name_b}", b, GREEN)):
        fig.add_trace(scatter(
            x=x, y=compact(values), name=f"{name} (mean {values.mean():.2f})", mode="lines+markers",
            line=dict(color=color), hovertemplate=f"{name}<br>%{{x}}<br>%{{y:.2f}} bits<extra></extra>",
        ), row=1, col=1)
    diff = b - a
    for name, shown, color in (("B − A > 0: B finds it harder", diff > 0, RED),
                               ("B − A < 0: B predicts it better", diff < 0, PURPLE)):  # not A's blue nor B's green
        fig.add_trace(bar(x=x, y=[float(d) if s else None for d, s in zip(compact(diff), shown)], name=name,
                          marker_color=color, hovertemplate="%{x}<br>B − A %{y:+.2f} bits<extra></extra>"),
                      row=2, col=1)
    fig.update_yaxes(title_text="bits per character", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="B − A", row=2, col=1)
    fig.update_xaxes(**position_axis("character of the text (position:character)"), row=2, col=1)
    fig.update_xaxes(type="category", row=1, col=1)
    return style_figure(fig, "Surprise at each character, model A and model B (lower = predicted better)", 540,
                        chart_width=WIDE_CHART, legend=top_legend(), margin=dict(t=100, b=90), barmode="relative")


def next_token_pair_figure(probs_a, vocab_a: list[str], probs_b, vocab_b: list[str], name_a: str, name_b: str,
                           top_n: int = 10) -> Figure:
    """Each model's top_n next tokens after the text, side by side (their vocabularies may differ), as horizontal
    bars, likeliest on top: a token of several marks ("⏎⏎", "␣␣␣␣") reads left to right, not stacked upright."""
    fig = subplots(rows=1, cols=2, subplot_titles=[f"A: {name_a}"[:60], f"B: {name_b}"[:60]],
                        horizontal_spacing=0.16)
    for col, (probs, vocab, color) in enumerate(((probs_a, vocab_a, BLUE), (probs_b, vocab_b, GREEN)), start=1):
        p = np.asarray(probs, dtype=np.float64)
        order = np.argsort(-p, kind="stable")[:top_n]
        labels = unique_labels(list(vocab))
        fig.add_trace(bar(y=[labels[i] for i in order], x=compact(p[order]), orientation="h", marker_color=color,
                          showlegend=False, hovertemplate="%{y}<br>probability %{x:.1%}<extra></extra>"),
                      row=1, col=col)
        fig.update_yaxes(type="category", autorange="reversed", automargin=True, row=1, col=col)
        fig.update_xaxes(tickformat=".0%", rangemode="tozero", title_text="probability", row=1, col=col)
    fig.update_yaxes(title_text="next token", row=1, col=1)
    return style_figure(fig, "What each model expects next", 400, margin=dict(t=90, b=60))


PAIR_GAP = 0.06  # paper width between A's grid and B's
AXIS_KEY = re.compile(r"[xy]axis\d*")


def attention_pair_figure(patterns_a, tokens_a: list[str], patterns_b, tokens_b: list[str], name_a: str, name_b: str,
                          selected: tuple[int, int] | None = None) -> Figure:
    """A's and B's layer × head attention grids ([L, H, T, T] each; shapes may differ) side by side, A left,
    B right, rows of equal height, one 0..1 colour scale; `selected` (layer, head) outlined where it exists."""
    pairs = ((patterns_a, tokens_a), (patterns_b, tokens_b))
    halves = [attention_grid_figure(p, t, selected if _has_head(p, selected) else None) for p, t in pairs]
    rows = max(p.shape[0] for p, _ in pairs)
    width, n_a = (1 - PAIR_GAP) / 2, len(halves[0].data)  # B's panels are numbered after A's
    layouts = [h.layout for h in halves]
    data, layout = [], {k: v for k, v in layouts[0].items() if not AXIS_KEY.fullmatch(k)}
    layout.update(annotations=[], shapes=[], height=max(h["height"] for h in layouts))
    for half, lay, (p, _), (x0, offset) in zip(halves, layouts, pairs, ((0.0, 0), (width + PAIR_GAP, n_a))):
        place = dict(x=lambda x: x0 + x * width, y=lambda y: 1 - (1 - y) * p.shape[0] / rows)  # top-aligned
        data += [{**t, "xaxis": _axis(t.xaxis or "x", offset), "yaxis": _axis(t.yaxis or "y", offset)} for t in half.data]
        for key, axis in lay.items():
            if AXIS_KEY.fullmatch(key):
                layout[_axis(key, offset)] = {**axis, "anchor": _axis(axis["anchor"], offset),
                                              "domain": [place[key[0]](d) for d in axis["domain"]]}
        layout["annotations"] += [{**a, "x": place["x"](a["x"]), "y": place["y"](a["y"])}
                                  for a in lay.get("annotations", [])]
        layout["shapes"] += [{**s, "xref": _axis(s["xref"], offset), "yref": _axis(s["yref"], offset)}
                             for s in lay.get("shapes", [])]
    layout["annotations"] += [dict(text=f"<b>{label[:60]}</b>", x=x0 + width / 2, y=1, xref="paper", yref="paper",
                                   xanchor="center", yanchor="bottom", yshift=22, showarrow=False)
                              for label, x0 in ((f"A: {name_a}", 0.0), (f"B: {name_b}", width + PAIR_GAP))]
    layout["title"] = {**layout["title"], "text": "Attention of every head, A (left) and B (right): rows = layers, "
                                                  "columns = heads; query ↓, key →"}
    layout["margin"] = {**layout.get("margin", {}), "t": 110}
    return Figure(data=data, layout=layout)


def _has_head(patterns, head: tuple[int, int] | None) -> bool:
    return head is not None and head[0] < patterns.shape[0] and head[1] < patterns.shape[1]


def _axis(name: str, offset: int) -> str:
    """'x3' (or 'xaxis3', 'x3 domain') renumbered `offset` panels on; plotly calls panel 1 'x', not 'x1'."""
    match = re.fullmatch(r"([xy])(axis)?(\d*)( domain)?", name)
    letter, word, number, domain = match.groups()
    n = int(number or 1) + offset
    return f"{letter}{word or ''}{n if n > 1 else ''}{domain or ''}"
