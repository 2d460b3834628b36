"""The head report card and friends: the layer × head role map, the induction view, and roles forming over
training (film strip, role scores over steps, embedding PCA frames)."""
import numpy as np

from explorer.common.controls import REPORT_HEADERS  # noqa: F401  (the report rows fit them)
from explorer.figures.attention import attention_grid_figure
from explorer.figures.common import (
    BLUE,
    GREY,
    ORANGE,
    PALETTE,
    SMALL_FONT,
    UNIT_RANGE,
    UNIT_TICKS,
    attention_coloraxis,
    compact,
    head_label,
    step_panels,
    style_figure,
    top_legend,
)
from explorer.figures.plain import Figure, heatmap, scatter

ROLE_COLOURS = {  # one colour per label of model_core.analysis.roles.ROLE_LABELS
    "induction": "#d62728", "previous token": "#1f77b4", "duplicate token": "#9467bd", "self": "#2ca02c",
    "local": "#17becf", "focused": "#8c564b", "broad": "#ff7f0e", "resting on the sink": "#c7c7c7",
}
ROLE_SHORT = {"induction": "induction", "previous token": "prev", "duplicate token": "dup", "self": "self",
              "local": "local", "focused": "focused", "broad": "broad", "resting on the sink": "sink"}
SCORE_COLUMNS = ("induction", "previous token", "duplicate token", "self", "local", "sink", "breadth",
                 "breadth max")
# snapshot head_stats drawn over training by role_scores_over_steps_figure -> their names
TRACKED_ROLES = {"induction": "induction", "prev_token": "previous token", "duplicate_token": "duplicate token",
                 "self": "self", "first_token": "first token (sink)"}


def role_map_figure(labels: list[str], scores: list[float], n_layers: int, n_heads: int) -> Figure:
    """One cell per head coloured by its role (labels, scores in layer-major order), text = role + score."""
    z = np.array([list(ROLE_COLOURS).index(label) for label in labels]).reshape(n_layers, n_heads)
    n = len(ROLE_COLOURS)
    scale = [[edge, colour] for i, colour in enumerate(ROLE_COLOURS.values()) for edge in (i / n, (i + 1) / n)]
    text = [[f"{ROLE_SHORT[labels[L * n_heads + h]]}<br>{scores[L * n_heads + h]:.0%}" for h in range(n_heads)]
            for L in range(n_layers)]
    hover = [[f"{head_label(L, h)}: {labels[L * n_heads + h]} ({scores[L * n_heads + h]:.0%})" for h in range(n_heads)]
             for L in range(n_layers)]
    fig = Figure(heatmap(
        z=z, x=[f"H{h}" for h in range(n_heads)], y=[f"L{L}" for L in range(n_layers)], zmin=-0.5, zmax=n - 0.5,
        colorscale=scale, showscale=False, text=text, texttemplate="%{text}", customdata=hover,
        hovertemplate="%{customdata}<extra></extra>", xgap=3, ygap=3,
    ))
    for label, colour in ROLE_COLOURS.items():  # a legend of the colours (empty traces)
        fig.add_trace(scatter(x=[None], y=[None], mode="markers", name=label,
                                 marker=dict(color=colour, size=12, symbol="square")))
    fig.update_yaxes(autorange="reversed", type="category", title_text="layer")
    fig.update_xaxes(type="category", title_text="head", side="bottom")
    return style_figure(fig, "What each head does (one role per head, coloured; score in %)",
                        height=180 + 55 * n_layers, legend=top_legend(), margin=dict(t=110),
                        plot_bgcolor="white")


def report_table(roles: list, scores: dict) -> list[list]:
    """HeadRole list + {score name: [L, H]} -> rows under REPORT_HEADERS."""
    return [[head_label(r.layer, r.head), r.label, round(r.score, 3), r.sentence]
            + [round(float(scores[name][r.layer, r.head]), 3) for name in SCORE_COLUMNS] for r in roles]


def induction_loss_figure(loss, length: int) -> Figure:
    """loss [2n] (NaN at 0) -> per-token loss, first copy vs second copy, with each copy's mean dashed."""
    loss = np.asarray(loss, dtype=np.float64)
    x = np.arange(len(loss))
    fig = Figure()
    for name, part, colour in (("first copy (random: unpredictable)", slice(1, length), BLUE),
                               ("second copy (a repeat: copyable)", slice(length, len(loss)), ORANGE)):
        fig.add_trace(scatter(x=x[part], y=compact(loss[part]), mode="lines+markers", name=name,
                                 line=dict(color=colour), hovertemplate="token %{x}<br>loss %{y:.2f}<extra></extra>"))
        mean = float(np.nanmean(loss[part][1:] if part.start == length else loss[part]))
        fig.add_hline(y=mean, line=dict(color=colour, dash="dash"), annotation_text=f"mean {mean:.2f}",
                      annotation_position="top right")
    fig.add_vline(x=length - 0.5, line=dict(color=GREY))
    fig.update_xaxes(title_text="position in the probe (random tokens, then the same tokens again)")
    fig.update_yaxes(title_text="loss (nats)", rangemode="tozero")
    return style_figure(fig, "Loss on each token of a random sequence shown twice", height=380,
                        legend=top_legend(), margin=dict(t=100))


def induction_pattern_figure(pattern, length: int, layer: int, head: int, score: float) -> Figure:
    """pattern [2n, 2n] of one head on the repeated probe, with the induction stripe (key = query - n + 1) traced."""
    T = pattern.shape[0]
    fig = Figure(heatmap(z=compact(pattern, 3), coloraxis="coloraxis",
                               hovertemplate="query %{y} → key %{x}<br>weight %{z:.3f}<extra></extra>"))
    queries = np.arange(length, T)
    fig.add_trace(scatter(x=queries - length + 1, y=queries, mode="lines",
                             name=f"induction stripe (key = query − {length - 1})",
                             line=dict(color="white", dash="dot", width=1), hoverinfo="skip"))
    fig.update_yaxes(autorange="reversed", title_text="query position")
    fig.update_xaxes(title_text="key position")
    return style_figure(fig, f"Strongest induction head {head_label(layer, head)} on the repeated probe "
                        f"(induction score {score:.0%})", height=460, coloraxis=attention_coloraxis(),
                        legend=top_legend(), margin=dict(t=100))


def film_strip_figure(patterns, step_labels: list[str], tokens: list[str], layer: int, head: int) -> Figure:
    """patterns [S, T, T] of one head at S snapshots -> small multiples in one row (or a few)."""
    S = len(patterns)
    cols = min(S, 6)
    rows = -(-S // cols)
    grid = np.zeros((rows, cols) + patterns.shape[1:], dtype=np.float32)
    for i in range(S):
        grid[i // cols, i % cols] = patterns[i]
    fig = attention_grid_figure(grid, tokens)
    names = [step_labels[i] if i < S else "" for i in range(rows * cols)]
    for annotation, name in zip(fig.layout.annotations, names):
        annotation.text = name
    return fig.update_layout(title=dict(text=f"Head {head_label(layer, head)} over training (one panel per snapshot)"),
                             height=max(260, 230 * rows))


def role_scores_over_steps_figure(steps, scores: dict, layer: int, head: int, val_loss=None) -> Figure:
    """scores {name: [S]} of one head over training steps; below them, in a panel of its own, the validation loss."""
    loss = np.asarray([] if val_loss is None else val_loss, dtype=float)
    rows = 2 if np.isfinite(loss).any() else 1
    fig = step_panels(rows)
    for i, (name, values) in enumerate(scores.items()):
        fig.add_trace(scatter(x=steps, y=compact(values, 3), mode="lines+markers", name=name,
                              line=dict(color=PALETTE[i % len(PALETTE)]),
                              hovertemplate=f"{name}<br>step %{{x}}<br>score %{{y:.2f}}<extra></extra>"), row=1, col=1)
    if rows == 2:
        fig.add_trace(scatter(x=steps, y=val_loss, mode="lines", name="validation loss", connectgaps=True,
                              line=dict(color="black", dash="dot"),
                              hovertemplate="step %{x}<br>val loss %{y:.2f}<extra></extra>"), row=2, col=1)
        fig.update_yaxes(title_text="loss", rangemode="tozero", row=2, col=1)
    fig.update_yaxes(title_text="score (share of attention)", range=UNIT_RANGE, tickvals=UNIT_TICKS, row=1, col=1)
    fig.update_xaxes(title_text="training step", row=rows, col=1)
    return style_figure(fig, f"Role scores of {head_label(layer, head)} over training", height=300 + 100 * rows,
                        legend=top_legend(), margin=dict(t=110))


def aligned_signs(coords: list) -> list:
    """Each snapshot's PCA is computed alone, so an axis may come out mirrored; flip each frame's axes to agree
    with the last frame's, so the play button shows movement rather than flips."""
    last = np.asarray(coords[-1], dtype=np.float32)
    out = []
    for c in coords:
        c = np.asarray(c, dtype=np.float32)
        out.append(c * np.where((c * last).sum(0) < 0, -1.0, 1.0).astype(np.float32))
    return out


def embedding_frames_figure(coords: list, steps: list[int], labels: list[str]) -> Figure:
    """coords [S] of [vocab, 2] token embeddings on their top PCs -> an animated scatter with a play button."""
    labels = [str(label) for label in labels]
    coords = aligned_signs(coords)
    points = lambda c: scatter(x=compact(c[:, 0], 3), y=compact(c[:, 1], 3), mode="markers+text",  # noqa: E731
                               text=labels, textposition="top center", marker=dict(color=BLUE, size=7),
                               textfont=dict(size=SMALL_FONT), hovertemplate="'%{text}'<extra></extra>")
    every = np.concatenate([np.asarray(c, dtype=np.float32) for c in coords])
    pad = lambda lo, hi: [float(lo - 0.1 * (hi - lo)), float(hi + 0.1 * (hi - lo))]  # noqa: E731
    fig = Figure(data=[points(np.asarray(coords[-1], dtype=np.float32))],
                    frames=[dict(data=[points(np.asarray(c, dtype=np.float32))], name=str(s))
                            for c, s in zip(coords, steps)])
    play = dict(label="▶ play", method="animate",
                args=[None, dict(frame=dict(duration=500, redraw=True), fromcurrent=True, transition=dict(duration=0))])
    pause = dict(label="❚❚ pause", method="animate", args=[[None], dict(mode="immediate", frame=dict(duration=0))])
    slider = dict(active=len(steps) - 1, currentvalue=dict(prefix="step "),
                  steps=[dict(label=str(s), method="animate",
                              args=[[str(s)], dict(mode="immediate", frame=dict(duration=0, redraw=True))])
                         for s in steps])
    fig.update_xaxes(range=pad(every[:, 0].min(), every[:, 0].max()), title_text="PC 1")
    fig.update_yaxes(range=pad(every[:, 1].min(), every[:, 1].max()), title_text="PC 2")
    return style_figure(fig, "Token embeddings over training (top 2 principal components of each snapshot)",
                        height=520, showlegend=False, sliders=[slider],
                        updatemenus=[dict(type="buttons", buttons=[play, pause], x=0, y=-0.12, xanchor="left")],
                        margin=dict(t=60, b=140))
