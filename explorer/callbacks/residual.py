"""Residual stream tab: norms across layers, update sizes, the stream heatmap, variance, logit lens."""
import numpy as np

from explorer.callbacks import validation
from explorer.callbacks.common import all_layers, analyse, clamp_layer, needs
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
from model_core.analysis.scale import is_large

HEATMAP_MODES = ("norm", "full")
TOP_K = 5  # the logit lens keeps each cell's 5 likeliest tokens, whatever the vocabulary
LENS_POSITIONS = 16  # a large model's lens decodes the last 16 positions (31 x 64 decodings of 49k tokens: seconds)


def residual_view(session: Session, prompt: str, layer, heatmap_mode: str = "norm", drop_unknown: bool = False):
    """-> norms, updates, update-vs-residual, heatmap, variance, logit-lens figures, caption markdown."""
    layer = clamp_layer(session, layer)
    mode = validation.choice(heatmap_mode or "norm", "Heatmap", HEATMAP_MODES)
    cfg = session.inspected.config
    needs(session, "updates", "lens")
    a = analyse(session, prompt, drop_unknown,
                names=all_layers(cfg.n_layers, "resid_pre", "resid_mid", "resid_post", "attn_out", "mlp_out"))
    r = residual_statistics(a.cache)
    large = is_large(cfg)
    lens = logit_lens(session.inspected.model, a.cache, k=TOP_K, last=LENS_POSITIONS if large else None)
    lens_t = lens.top_ids.shape[1]  # positions decoded
    label = np.vectorize(session.inspected.tokenizer.token_label, otypes=[object])
    top_k_labels = label(lens.top_ids)  # [L+1, T, k]
    stream = residual_stream(a.cache)  # [L+1, T, D]
    shown, shown_labels = (stream[:, -1:], a.labels[-1:]) if large and mode == "full" else (stream, a.labels)
    figures = (
        residual_norms_figure(r.resid_pre, r.resid_mid, r.resid_post),
        update_norms_figure(r.attn_out, r.mlp_out),
        update_vs_residual_figure(r.attn_out[layer], r.resid_pre[layer], a.labels, layer),
        residual_heatmap_figure(shown, shown_labels, mode=mode),
        variance_figure(r.resid_var[layer], r.attn_var[layer], a.labels, layer),
        logit_lens_figure(top_k_labels[..., 0], lens.top_probs[..., 0], a.labels[-lens_t:],
                          top_k_labels=top_k_labels, top_k_probs=lens.top_probs, first_position=len(a.ids) - lens_t),
    )
    caption = captions.chart_captions({
        "Residual norm across layers": captions.residual_caption(r.resid_pre, r.resid_post, r.attn_out),
        "Update size per layer": captions.update_norms_caption(r.attn_out, r.mlp_out),
        "Update vs residual per position": captions.update_vs_residual_caption(
            r.attn_out[layer], r.resid_pre[layer], a.labels, layer),
        "Variance": captions.variance_caption(r.resid_var[layer], r.attn_var[layer], layer),
        "The residual stream": captions.residual_heatmap_caption(stream, a.labels) + (
            f" Only the last position's {cfg.d_model} values are drawn: {len(a.labels)} positions × "
            f"{cfg.d_model} values × {cfg.n_layers + 1} rows would be unreadable." if shown is not stream else ""),
        "Logit lens": captions.logit_lens_caption(top_k_labels[..., 0], lens.top_probs[..., 0]) + (
            f" Hover a cell for its top {TOP_K} of the {cfg.vocab_size:,} tokens; only the last {lens_t} positions "
            "are decoded (each decoding scores the whole vocabulary)." if large else "")})
    return (*figures, caption)
