"""Pure figure builders: numpy arrays (+ token labels) -> figures Plotly.js draws (explorer.figures.plain). No torch, no Gradio."""
from explorer.figures.attention import (
    attention_grid_figure,
    attention_head_figure,
    attention_steps_figure,
    live_attention_figure,
    query_attention_bars_figure,
)
from explorer.figures.building_blocks import activation_functions_figure, layernorm_effect_figure
from explorer.figures.common import figure_to_json, index_labels
from explorer.figures.data import token_index_figure
from explorer.figures.embeddings import embedding_norms_figure, pca_scatter_figure, positional_heatmap_figure
from explorer.figures.ffn import TOP_TOKENS_HEADERS, ffn_histograms_figure, neuron_sparsity_figure, top_tokens_table
from explorer.figures.heads import HEAD_TABLE_HEADERS, head_statistics_table
from explorer.figures.logit_lens import logit_lens_figure
from explorer.figures.residual import (
    residual_heatmap_figure,
    residual_norms_figure,
    update_norms_figure,
    update_vs_residual_figure,
    variance_figure,
)
from explorer.figures.sampling import (
    GENERATION_TABLE_HEADERS,
    generation_steps_table,
    next_token_figure,
    temperature_curve_figure,
)
from explorer.figures.training import loss_figure
