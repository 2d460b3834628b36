"""Reading and using one feature: its activations on a prompt, the tokens it promotes and suppresses through
the unembedding, and steering (adding a multiple of its decoder direction at its hook while generating)."""
from typing import Sequence

import torch

from model_core.features.activations import activations_at
from model_core.model.sampling import generate


@torch.inference_mode()
def prompt_activations(model, sae, ids: Sequence[int]) -> torch.Tensor:
    """Feature activations [T, d_sae] of a prompt (ids [T], at most block_size)."""
    x = activations_at(model, torch.tensor([list(ids)]), sae.cfg.hook_name)[0]  # [T, d_in]
    return sae.encode(x)


@torch.inference_mode()
def residual_direction(model, sae, feature: int) -> torch.Tensor:
    """The feature's decoder direction as written into the residual stream [d_model]: itself for a
    residual-stream SAE, through the FFN's output weights for one on the MLP hidden layer."""
    direction = sae.W_dec[feature]  # [d_in]
    if sae.cfg.hook_name.endswith("mlp.hook_post"):
        layer = int(sae.cfg.hook_name.split(".")[1])
        direction = model.blocks[layer].mlp.W_out.weight @ direction  # [d_model]
    return direction


@torch.inference_mode()
def logit_effects(model, sae, feature: int) -> torch.Tensor:
    """[vocab] how much the feature's direction raises each token's logit, through the final norm's gain
    (its mean removed first for a LayerNorm) and the unembedding, as direct logit attribution reads it."""
    d = residual_direction(model, sae, feature).float()  # [d_model]
    ln = model.ln_final.norm
    if isinstance(ln, torch.nn.LayerNorm):
        d = d - d.mean()
    if getattr(ln, "weight", None) is not None:
        d = d * ln.weight
    return model.unembed.weight.float() @ d  # [vocab]


def steering_hook(sae, feature: int, strength: float):
    """A hook adding strength x the feature's unit decoder direction at every position it sees."""
    delta = (strength * sae.W_dec[feature]).detach()

    def hook(x, _hook_point):
        return x + delta.to(x.dtype)
    return hook


def steered_generation(model, prompt_ids: Sequence[int], sae, feature: int, strength: float, max_new_tokens: int,
                       settings, seed: int) -> list:
    """model_core.model.sampling.generate's Steps with the steering hook attached for the whole generation
    (strength 0 gives the unsteered text of the same seed)."""
    with model.hooks([(sae.cfg.hook_name, steering_hook(sae, feature, strength))]):
        return list(generate(model, prompt_ids, max_new_tokens, settings.temperature, settings.top_k,
                             settings.top_p, settings.min_p, seed=seed, keep_distributions=False))
