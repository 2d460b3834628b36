"""SAE features: one feature's activation histogram and logit effects, the SAE's log-density histogram, and the
text views (a prompt coloured by a feature, its top activating contexts). Pure functions of arrays and strings."""
import html

import numpy as np

from explorer.figures.common import BLUE, GREY, RED, compact, histogram_bars, style_figure
from explorer.figures.plain import Figure, bar

HIGHLIGHT = "255, 140, 0"  # orange, as rgba(...) with the activation as its opacity


def feature_histogram_figure(counts, max_value: float, density: float, feature: int, n_tokens: int) -> Figure:
    """counts [bins] of the feature's nonzero activations, binned evenly from 0 to max_value."""
    counts = np.asarray(counts)
    edges = np.linspace(0.0, max(float(max_value), 1e-6), len(counts) + 1)
    fig = Figure()
    fig.add_trace(histogram_bars(counts, edges, "positions", BLUE))
    fig.update_xaxes(title_text="activation (when active)")
    fig.update_yaxes(title_text="positions")
    title = (f"Feature {feature} · fires on {density:.2%} of {n_tokens:,} validation tokens"
             if density > 0 else f"Feature {feature} · never fires on the {n_tokens:,} validation tokens (dead)")
    return style_figure(fig, title, height=320, showlegend=False, bargap=0)


def logit_effects_figure(promoted: list[str], promoted_values, suppressed: list[str], suppressed_values,
                         feature: int) -> Figure:
    """Tokens whose logits the feature's direction raises most (values [k] > 0) and lowers most (< 0)."""
    labels = [f"{t} " for t in suppressed][::-1] + [f"{t} " for t in promoted][::-1]
    values = np.concatenate([np.asarray(suppressed_values)[::-1], np.asarray(promoted_values)[::-1]])
    fig = Figure()
    fig.add_trace(bar(x=compact(values), y=labels, orientation="h",
                      marker_color=[RED if v < 0 else BLUE for v in values],
                      hovertemplate="%{y}: %{x:+.3f} per unit of activation<extra></extra>"))
    fig.update_xaxes(title_text="change in the token's logit per unit of activation", zeroline=True)
    fig.update_yaxes(type="category", automargin=True)
    return style_figure(fig, f"Feature {feature} · tokens it promotes (blue) and suppresses (red)",
                        height=max(320, 22 * len(labels) + 120), showlegend=False)


def log_density_figure(counts, edges, dead: int, n_features: int) -> Figure:
    """The SAE's features binned by log10 of how often they fire (dead ones in the grey first bin)."""
    counts, edges = np.asarray(counts), np.asarray(edges, dtype=np.float64)
    fig = Figure()
    colors = [GREY] + [BLUE] * (len(counts) - 1)
    trace = histogram_bars(counts, edges, "features", BLUE)
    trace["marker"]["color"] = colors
    trace["hovertemplate"] = "density ≈ 10^%{x:.1f}<br>%{y} features<extra></extra>"
    fig.add_trace(trace)
    fig.update_xaxes(title_text="log10 of the share of tokens a feature fires on")
    fig.update_yaxes(title_text="features")
    return style_figure(fig, f"How often the {n_features:,} features fire ({dead} never, grey)", height=300,
                        showlegend=False, bargap=0)


def _cell(label: str, value: float, scale: float, title: str) -> str:
    alpha = 0.0 if scale <= 0 else min(1.0, max(0.0, value / scale))
    text = html.escape(label).replace("\n", "↵<br>")
    if alpha < 0.005:
        return text
    return (f"<span title='{html.escape(title)}' style='background: rgba({HIGHLIGHT}, {alpha:.2f}); "
            f"border-radius: 3px; padding: 1px 0;'>{text}</span>")


def prompt_activation_html(labels: list[str], values, feature: int, scale: float) -> str:
    """The prompt's tokens, each shaded by the feature's activation there (scale: the activation drawn fully
    orange, e.g. the feature's largest on the validation text)."""
    values = np.asarray(values, dtype=np.float64)
    cells = [_cell(label, v, scale, f"{i}:{label} activation {v:.3f}") for i, (label, v) in enumerate(zip(labels, values))]
    return (f"<div class='te-examples' style='font-family: ui-monospace, monospace; line-height: 1.9'>"
            f"{''.join(cells)}</div><div class='te-metrics'>Feature {feature} on the prompt: darker orange = "
            f"stronger (full colour at {scale:.2f}).</div>")


def examples_html(contexts: list[tuple[list[str], int, list[float]]], values, feature: int) -> str:
    """contexts [(token labels around a top place, index of the place in them, activations of those tokens)],
    values [k] the activation at each place: one line per example, the place in bold, shaded as above."""
    if not contexts:
        return f"<p>Feature {feature} never fires on the validation text: it has no examples.</p>"
    scale = float(np.max(values)) if len(values) else 1.0
    rows = []
    for (labels, at, acts), value in zip(contexts, np.asarray(values).tolist()):
        cells = [(_cell(label, a, scale, f"activation {a:.3f}") if i != at else
                  f"<b style='outline: 2px solid rgb({HIGHLIGHT}); border-radius: 3px'>"
                  f"{_cell(label, a, scale, f'activation {a:.3f}')}</b>") for i, (label, a) in enumerate(zip(labels, acts))]
        rows.append(f"<tr><td style='text-align:right; padding-right: 8px'>{value:.2f}</td>"
                    f"<td style='font-family: ui-monospace, monospace; white-space: pre-wrap'>{''.join(cells)}</td></tr>")
    return (f"<table class='te-examples'><tr><th>activation</th><th>context (the place in a box)</th></tr>"
            f"{''.join(rows)}</table>")


def steering_html(prompt: str, plain: str, steered: str, feature: int, strength: float, seed: int,
                  temperature: float) -> str:
    """Two columns: the model's continuation and the steered one, from the same prompt and seed."""
    heads = ["Without steering", f"Feature {feature} added × {strength:g}"]
    cells = [f"<div class='te-col'><div class='te-col-head'>{html.escape(h)}</div><pre class='te-gen'><b>"
             f"{html.escape(prompt)}</b>{html.escape(t)}</pre></div>" for h, t in zip(heads, (plain, steered))]
    note = f"Same prompt, seed {seed} and temperature {temperature:g} in both columns."
    return f"<div class='te-compare'>{''.join(cells)}</div><div class='te-metrics'>{note}</div>"
