"""FFN tab: activation histograms, neuron sparsity, dead neurons, the tokens that excite a neuron."""
from explorer.callbacks import validation
from explorer.callbacks.common import all_layers, analyse, clamp_layer, layer_names
from explorer.figures.ffn import ffn_histograms_figure, neuron_sparsity_figure, top_tokens_table
from explorer.state.session import Session
from explorer.teaching import captions
from model_core.analysis import ffn_statistics, top_activating_positions

ACTIVATION_NAMES = {"gelu": "GELU", "gelu_tanh": "GELU (tanh approximation)", "relu": "ReLU", "relu2": "ReLU squared", "swiglu": "SwiGLU (SiLU gate)"}


def ffn_view(session: Session, prompt: str, layer, neuron, drop_unknown: bool = False):
    """-> histograms figure, sparsity figure, top-token rows, caption markdown."""
    layer = clamp_layer(session, layer)
    cfg = session.inspected.model.cfg
    neuron = validation.whole_number(neuron, "Neuron", minimum=0, maximum=cfg.d_mlp - 1, default=0)
    a = analyse(session, prompt, drop_unknown, names=all_layers(cfg.n_layers, "pre") + layer_names(layer, "post"))
    stats = ffn_statistics(a.cache, layer)
    positions, values = top_activating_positions(a.cache["post", layer][0].float().numpy(), neuron, k=10)
    return (
        ffn_histograms_figure(stats.pre_hist, stats.pre_edges, stats.post_hist, stats.post_edges, layer,
                              ACTIVATION_NAMES[cfg.activation]),
        neuron_sparsity_figure(stats.fraction_active, stats.layer_sparsity, layer),
        top_tokens_table(positions, values, a.labels),
        captions.chart_captions({
            "Activation values": captions.ffn_histogram_caption(stats.pre_hist, stats.pre_edges, stats.post_hist,
                                                                stats.post_edges, ACTIVATION_NAMES[cfg.activation]),
            "How often each neuron fires": captions.ffn_caption(stats.fraction_active, stats.dead),
            f"Neuron {neuron}": captions.top_tokens_caption(positions, values, a.labels)}),
    )
