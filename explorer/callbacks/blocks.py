"""Building blocks tab (seed 003): a norm layer's effect on the inspected model's real residual stream, and
the activation functions GELU vs ReLU (vs SiLU)."""
import numpy as np

from explorer.callbacks.common import analyse, clamp_layer, layer_names
from explorer.callbacks.ffn import ACTIVATION_NAMES
from explorer.figures.building_blocks import (
    ACTIVATION_X,
    activation_curves,
    activation_functions_figure,
    layernorm_effect_figure,
)
from explorer.state.session import Session
from explorer.teaching import captions_blocks

NORM_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm", "none": "LayerNorm"}
ACTIVATION_LABELS = {**ACTIVATION_NAMES, "relu2": "ReLU squared"}


def norm_input_output(cache, cfg, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(values going into the layer's first norm, what comes out) [T, D]. Pre-norm: the residual stream
    before the block; post-norm: stream + attention update. A model without norms gets a plain LayerNorm
    (no learned gain) computed here, to show what one would do."""
    before = cache["resid_pre", layer][0].float().numpy()  # (T, D)
    if cfg.norm_placement == "post":
        before = before + cache["attn_out", layer][0].float().numpy()  # (T, D)
    if cfg.norm == "none":
        centred = before - before.mean(-1, keepdims=True)
        return before, centred / np.sqrt(centred.var(-1, keepdims=True) + 1e-5)
    key = ("resid_mid", layer) if cfg.norm_placement == "post" else f"blocks.{layer}.ln1.hook_normalized"
    return before, cache[key][0].float().numpy()


def blocks_view(session: Session, prompt: str, layer, drop_unknown: bool = False):
    """-> norm before/after figure, activation functions figure, caption markdown."""
    layer = clamp_layer(session, layer)
    cfg = session.inspected.model.cfg
    a = analyse(session, prompt, drop_unknown,
                names=layer_names(layer, "resid_pre", "attn_out", "resid_mid") + (f"blocks.{layer}.ln1.hook_normalized",))
    before, after = norm_input_output(a.cache, cfg, layer)
    norm = NORM_NAMES[cfg.norm]
    where = f"layer {layer}, {'after' if cfg.norm_placement == 'post' else 'before'} attention"
    note = (" This model has no norm layer: the right panel shows what a LayerNorm would do."
            if cfg.norm == "none" else "")
    activation = "none (attention only)" if cfg.attn_only else ACTIVATION_LABELS.get(cfg.activation, cfg.activation)
    words = captions_blocks.activation_caption(activation_curves(ACTIVATION_X), ACTIVATION_X, activation)
    norm_words = captions_blocks.norm_effect_caption(before, after, norm, where)
    text = f"- **Norm:** {norm_words}{note}\n- **Activations:** {words}"
    return layernorm_effect_figure(before, after, norm_name=norm, where=where), activation_functions_figure(), text
