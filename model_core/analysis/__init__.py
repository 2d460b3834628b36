"""Pure analysis of a model's activations: numpy in or out, no plotting."""
from model_core.analysis.ffn import FFNStats, ffn_statistics, top_activating_positions
from model_core.analysis.heads import HEAD_STAT_NAMES, head_role, head_statistics
from model_core.analysis.logit_lens import LogitLens, logit_lens
from model_core.analysis.pca import (
    PCAResult,
    embedding_pca,
    hidden_state_pca,
    positional_pca,
    token_embedding_pca,
    token_plus_position_pca,
)
from model_core.analysis.residual import ResidualStats, residual_statistics, residual_stream

__all__ = [
    "HEAD_STAT_NAMES", "head_statistics", "head_role",
    "ResidualStats", "residual_statistics", "residual_stream",
    "PCAResult", "embedding_pca", "token_embedding_pca", "positional_pca", "token_plus_position_pca",
    "hidden_state_pca",
    "FFNStats", "ffn_statistics", "top_activating_positions",
    "LogitLens", "logit_lens",
]
