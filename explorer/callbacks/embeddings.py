"""Embeddings tab: PCA of token, position and token+position vectors, hidden states, positional heatmap."""
import torch

from explorer.callbacks import validation
from explorer.callbacks.common import analyse, clamped_index, layer_names, needs
from explorer.figures.embeddings import (
    embedding_norms_figure,
    no_positions_figure,
    pca_scatter_figure,
    positional_heatmap_figure,
)
from explorer.state.session import Session
from explorer.teaching import captions
from model_core.analysis import hidden_state_pca, positional_pca, token_embedding_pca, token_plus_position_pca
from model_core.analysis.scale import is_large

PCA_TOKENS = 2000  # a large vocabulary's PCA shows its first 2,000 tokens (49k points: slow to fit and to draw)


def embeddings_view(session: Session, prompt: str, dims, layer, drop_unknown: bool = False):
    """-> token PCA, positional PCA, token+position PCA, hidden-state PCA, positional heatmap, norms, caption."""
    k = int(validation.choice(dims or "2", "PCA dimensions", ("2", "3")))
    layer = clamped_index(layer, "Hidden-state layer", session.inspected.model.cfg.n_layers)
    cfg = session.inspected.config
    needs(session, "embed", "positions")
    a = analyse(session, prompt, drop_unknown, names=("blocks.0.hook_resid_pre",) if layer == 0 else
                layer_names(layer - 1, "resid_post"))
    model, tok = session.inspected.model, session.inspected.tokenizer
    shown = PCA_TOKENS if is_large(cfg) and cfg.vocab_size > PCA_TOKENS else cfg.vocab_size
    vocab = [tok.token_label(i) for i in range(shown)]
    has_positions = model.cfg.has_position_vectors  # rope and none add no position vectors
    tok_pca = token_embedding_pca(model, k, rows=shown)
    pos_pca = positional_pca(model, k) if has_positions else None
    both = token_plus_position_pca(model, a.ids, k)
    hidden = hidden_state_pca(a.cache, layer, k) if len(a.ids) >= 2 else both
    pos_labels = [str(p) for p in range(model.cfg.block_size)]
    where = "the embeddings" if layer == 0 else f"layer {layer - 1}"
    with torch.no_grad():
        tok_norms = model.embed.weight[a.ids].norm(dim=-1).numpy()
        pos_table = model.position_embeddings(model.cfg.block_size).detach().cpu()
        pos_norms = pos_table[: len(a.ids)].norm(dim=-1).numpy()
    return (
        pca_scatter_figure(tok_pca.coords, vocab, None, "Token embeddings (one point per vocabulary entry)"
                           if shown == cfg.vocab_size else f"Token embeddings (tokens 0 to {shown - 1})",
                           tok_pca.explained_variance_ratio),
        pca_scatter_figure(pos_pca.coords, pos_labels, pos_pca.positions, "Position embeddings",
                           pos_pca.explained_variance_ratio)
        if has_positions else no_positions_figure(model.cfg.positional, "Position embeddings"),
        pca_scatter_figure(both.coords, a.labels, both.positions, "Token + position (the prompt's first residual)",
                           both.explained_variance_ratio),
        pca_scatter_figure(hidden.coords, a.labels, hidden.positions, f"Hidden state after {where}",
                           hidden.explained_variance_ratio),
        positional_heatmap_figure(pos_table.numpy(), kind=position_table_kind(session)) if has_positions
        else no_positions_figure(model.cfg.positional, "Positional embeddings"),
        embedding_norms_figure(tok_norms, pos_norms, a.labels),
        captions.chart_captions({
            "Token embeddings": captions.embedding_caption(tok_pca.explained_variance_ratio) + (
                f" Only the first {shown:,} of the {cfg.vocab_size:,} tokens are drawn: a BPE tokenizer numbers "
                "its pieces in the order it learned them, so these are the most common ones."
                if shown < cfg.vocab_size else ""),
            "Position embeddings": captions.positional_caption(pos_table.numpy(), position_table_kind(session))
            if has_positions else "",
            "Token + position": captions.embedding_caption(both.explained_variance_ratio),
            "Hidden states": captions.embedding_caption(hidden.explained_variance_ratio),
            "Token vs position vector sizes": captions.embedding_norms_caption(tok_norms, pos_norms)}),
    )


def position_table_kind(session: Session) -> str:
    """What the inspected model's position vectors are: 'sinusoidal' (fixed waves), 'untrained' (learned ones still
    random) or 'learned' (figures.embeddings.POSITION_TABLE_TITLES)."""
    if session.inspected.config.positional == "sinusoidal":
        return "sinusoidal"
    return "untrained" if session.inspected.untrained else "learned"
