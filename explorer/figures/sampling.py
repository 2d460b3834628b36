"""Sampling: the next-token distribution before/after filtering, temperature, step-by-step generation."""
import numpy as np

from explorer.common.controls import GENERATION_TABLE_HEADERS  # noqa: F401  (the step rows fit them)
from explorer.figures.common import (
    BLUE,
    FONT_SIZE,
    GREEN,
    GREY,
    ORANGE,
    PALETTE,
    axis_length,
    compact,
    lines_figure,
    style_figure,
    top_legend,
    unique_labels,
    visible_tick,
)
from explorer.figures.plain import Figure, bar

SEED_LOGITS = np.linspace(-5, 5, 100)  # the seed's "100 evenly spaced logits" demo
# A temperature keeps its colour from one press to the next, whichever others are drawn beside it: the reference
# temperatures have their own, the slider's own (any other) takes the next colours of the palette (red first).
TEMPERATURE_COLOURS = {0.5: BLUE, 1.0: ORANGE, 2.0: GREEN}


def softmax(logits, temperature: float = 1.0) -> np.ndarray:
    """Numerically stable softmax of logits / temperature (float64)."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


def next_token_figure(probs_before, probs_after, removed, labels: list[str], top_n: int = 30,
                      after_name: str = "after the sampling settings") -> Figure:
    """[V] probabilities before/after top-k/top-p filtering and removed [V] bool -> grouped bars for the
    top_n tokens by model probability; cut tokens are grey and have an 'after' bar of exactly 0. after_name names
    the settings in the legend ('after temperature 2'); the kept tokens' share of 100% is said when some are cut."""
    before, removed = np.asarray(probs_before, dtype=np.float64), np.asarray(removed, dtype=bool)
    order = np.argsort(-before, kind="stable")[:top_n]
    after = np.where(removed, 0.0, np.asarray(probs_after, dtype=np.float64))[order]
    vocab = unique_labels(list(labels))
    names = [vocab[i] for i in order]
    cut = removed[order]
    fig = Figure([
        bar(x=names, y=compact(before[order]), name="the model's own odds",
               marker_color=[GREY if c else BLUE for c in cut],
               hovertemplate="%{x}<br>model probability %{y:.1%}<extra></extra>"),
        bar(x=names, y=compact(after), name=after_name + (" (the kept ones share 100%)" if removed.any() else ""),
               marker_color=ORANGE, hovertemplate=f"%{{x}}<br>{after_name} %{{y:.1%}}<extra></extra>"),
        bar(x=[None], y=[None], name="cut by filtering (grey)", marker_color=GREY, showlegend=True),
    ])
    fig.update_xaxes(title_text="token (most likely first)", type="category")
    fig.update_yaxes(title_text="probability", tickformat=".0%")
    # the top token named in the plot's top right corner (its turned label is small), in a band above the tallest
    # bar: at temperature 0 one bar reaches 100 % and the note covered it and its tick
    note = top_token_note(names[0], after[0], before[order[0]], after_name)
    fig.add_annotation(text=note, x=1, y=1, xref="paper", yref="paper", xanchor="right", yanchor="top",
                       showarrow=False, font=dict(size=FONT_SIZE + 2), bgcolor="rgba(255,255,255,0.85)")
    title = f"Next-token probabilities: filtering cut {int(removed.sum())} of {len(removed)} tokens " \
            f"(top {len(order)} shown)"
    fig = style_figure(fig, title, height=420, barmode="group", bargap=0.25, legend=top_legend(),
                       margin=dict(t=130, b=80))
    top = float(max(before[order].max(), after.max(), 1e-9))
    return fig.update_yaxes(**probability_axis(top, note_share(note, axis_length(fig, "yaxis"))))


NOTE_LINE_PX = round((FONT_SIZE + 2) * 1.3)  # a line of the corner note


def note_share(note: str, plot_px: float) -> float:
    """The share of a plot plot_px high that the corner note's lines take, with 8 px of air below them."""
    return min((note.count("<br>") + 1) * NOTE_LINE_PX / max(plot_px, 1) + 8 / max(plot_px, 1), 0.6)


def probability_axis(top: float, share: float) -> dict:
    """The range (and ticks) of a probability axis from 0 whose top share is left to the corner note: the tallest bar (top) ends below it.
    Ticks stop at 100 %: a probability never goes above it, even where the axis does."""
    high = top * 1.02 / (1 - share)
    axis = dict(range=[0, high])
    if high > 1:
        axis.update(tickmode="array", tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1.0])
    return axis


def top_token_note(label: str, after: float, before: float, after_name: str) -> str:
    """The corner note on the top token: its probability as the orange bar draws it (after_name: 'after temperature
    0.3'), and the model's own beside it when the settings change it ('most likely: e (62%)' when they do not)."""
    if f"{after:.0%}" == f"{before:.0%}":
        return f"most likely: {visible_tick(label)} ({before:.0%})"
    return f"most likely: {visible_tick(label)} ({after:.0%} {after_name})<br>the model's own odds: {before:.0%}"


def temperature_curve_figure(logits=None, temperatures=(0.5, 1.0, 2.0), labels: list[str] | None = None,
                             top_n: int = 10) -> Figure:
    """Softmax at several temperatures: over the model's top_n next tokens (logits [V], labels [V]),
    or, without logits, over the seed's 100 evenly spaced logits in [-5, 5]."""
    colours = temperature_colours(temperatures)
    if logits is None:
        series = [(f"T = {t:g}", softmax(SEED_LOGITS, t)) for t in temperatures]
        fig = lines_figure(compact(SEED_LOGITS, 3), series, "Softmax sensitivity to temperature",
                           "logit", "probability", with_means=False, colors=colours)
        return fig.update_traces(mode="lines")
    order = np.argsort(-np.asarray(logits, dtype=np.float64), kind="stable")[:top_n]
    names = unique_labels(list(labels) if labels is not None else [str(i) for i in range(len(logits))])
    series = [(f"T = {t:g}", softmax(logits, t)[order]) for t in temperatures]  # softmax over the full vocab
    fig = lines_figure([names[i] for i in order], series,
                       f"Softmax sensitivity to temperature (top {len(order)} next tokens)",
                       "token (highest logit first)", "probability", with_means=False, colors=colours,
                       x_axis=dict(type="category"))
    return fig.update_yaxes(tickformat=".0%")


def temperature_colours(temperatures) -> list[str]:
    """One colour per temperature that depends on the temperature, not on its place in the list."""
    others = iter(PALETTE[3:] * len(temperatures))
    return [TEMPERATURE_COLOURS.get(float(t)) or next(others) for t in temperatures]


def generation_steps_table(steps: list[dict]) -> list[list]:
    """[{token_label, prob, model_prob, logprob}, ...] -> rows for GENERATION_TABLE_HEADERS."""
    rows, total = [], 0.0
    for step, s in enumerate(steps, start=1):
        total += float(s["logprob"])
        rows.append([step, s["token_label"], round(float(s["prob"]), 3),
                     round(float(s.get("model_prob", s["prob"])), 3), round(total, 3)])
    return rows
