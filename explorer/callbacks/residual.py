"""Residual stream tab: norms across layers, update sizes, the stream heatmap, variance, logit lens."""
import numpy as np

from explorer.callbacks import validation
from explorer.callbacks.common import analyse, clamp_layer
from explorer.figures.logit_lens import logit_lens_figure
from explorer.figures.residual import (
    residual_heatmap_figure,
    residual_norms_figure,
    update_norms_figure,
    update_vs_residual_figure,
    variance_figure,
)
from explorer.state.session import Session
from explorer.teaching import captions
from model_core.analysis import logit_lens, residual_statistics, residual_stream

HEATMAP_MODES = ("norm", "full")


def residual_view(session: Session, prompt: str, layer, heatmap_mode: str = "norm", drop_unknown: bool = False):
    """-> norms, updates, update-vs-residual, heatmap, variance, logit-lens figures, caption markdown."""
    layer = clamp_layer(session, layer)
    mode = validation.choice(heatmap_mode or "norm", "Heatmap", HEATMAP_MODES)
    a = analyse(session, prompt, drop_unknown)
    r = residual_statistics(a.cache)
    lens = logit_lens(session.model, a.cache, k=5)
    label = np.vectorize(session.tokenizer.token_label, otypes=[object])
    top_k_labels = label(lens.top_ids)  # [L+1, T, k]
    stream = residual_stream(a.cache)  # [L+1, T, D]
    figures = (
        residual_norms_figure(r.resid_pre, r.resid_mid, r.resid_post),
        update_norms_figure(r.attn_out, r.mlp_out),
        update_vs_residual_figure(r.attn_out[layer], r.resid_pre[layer], a.labels, layer),
        residual_heatmap_figure(stream, a.labels, mode=mode),
        variance_figure(r.resid_var[layer], r.attn_var[layer], a.labels, layer),
        logit_lens_figure(top_k_labels[..., 0], lens.top_probs[..., 0], a.labels,
                          top_k_labels=top_k_labels, top_k_probs=lens.top_probs),
    )
    caption = captions.chart_captions({
        "Residual norm across layers": captions.residual_caption(r.resid_pre, r.resid_post, r.attn_out),
        "Update size per layer": captions.update_norms_caption(r.attn_out, r.mlp_out),
        "Update vs residual per position": captions.update_vs_residual_caption(
            r.attn_out[layer], r.resid_pre[layer], a.labels, layer),
        "Variance": captions.variance_caption(r.resid_var[layer], r.attn_var[layer], layer),
        "The residual stream": captions.residual_heatmap_caption(stream, a.labels),
        "Logit lens": captions.logit_lens_caption(top_k_labels[..., 0], lens.top_probs[..., 0])})
    return (*figures, caption)
