"""Two models side by side on one text: bits per character along the text, and each model's next-token guess."""
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import BLUE, GREEN, RED, compact, position_axis, style_figure, top_legend, unique_labels


def character_bits_figure(bits_a, bits_b, positions: list[str], name_a: str, name_b: str) -> go.Figure:
    """Bits [n] each model spends on each character of the text (positions: 'index:character' labels), and
    below, B − A (red: B finds it harder)."""
    a, b = np.asarray(bits_a, dtype=np.float64), np.asarray(bits_b, dtype=np.float64)
    x = list(positions)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.6, 0.4], vertical_spacing=0.06)
    for name, values, color in ((f"A: {name_a}", a, BLUE), (f"B: {name_b}", b, GREEN)):
        fig.add_trace(go.Scatter(
            x=x, y=compact(values), name=f"{name} (mean {values.mean():.2f})", mode="lines+markers",
            line=dict(color=color), hovertemplate=f"{name}<br>%{{x}}<br>%{{y:.2f}} bits<extra></extra>",
        ), row=1, col=1)
    diff = b - a
    fig.add_trace(go.Bar(x=x, y=compact(diff), name="B − A", marker_color=[RED if d > 0 else BLUE for d in diff],
                         hovertemplate="%{x}<br>B − A %{y:+.2f} bits<extra></extra>"), row=2, col=1)
    fig.update_yaxes(title_text="bits per character", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="B − A", row=2, col=1)
    fig.update_xaxes(**position_axis(len(x), "character of the text (position:character)"), row=2, col=1)
    fig.update_xaxes(type="category", row=1, col=1)
    return style_figure(fig, "Surprise at each character, model A and model B (lower = predicted better)", 540,
                        legend=top_legend(), margin=dict(t=100, b=90))


def next_token_pair_figure(probs_a, vocab_a: list[str], probs_b, vocab_b: list[str], name_a: str, name_b: str,
                           top_n: int = 10) -> go.Figure:
    """Each model's top_n next tokens after the text, side by side (their vocabularies may differ)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=[f"A: {name_a}"[:60], f"B: {name_b}"[:60]],
                        horizontal_spacing=0.1)
    for col, (probs, vocab, color) in enumerate(((probs_a, vocab_a, BLUE), (probs_b, vocab_b, GREEN)), start=1):
        p = np.asarray(probs, dtype=np.float64)
        order = np.argsort(-p, kind="stable")[:top_n]
        labels = unique_labels(list(vocab))
        fig.add_trace(go.Bar(x=[labels[i] for i in order], y=compact(p[order]), marker_color=color, showlegend=False,
                             hovertemplate="%{x}<br>probability %{y:.1%}<extra></extra>"), row=1, col=col)
        fig.update_xaxes(type="category", title_text="next token", row=1, col=col)
    fig.update_yaxes(tickformat=".0%", rangemode="tozero", title_text="probability", row=1, col=1)
    fig.update_yaxes(tickformat=".0%", rangemode="tozero", row=1, col=2)
    return style_figure(fig, "What each model expects next", 400, margin=dict(t=90, b=70))
