"""Live model objects of families the converters know, turned into our GPT in memory (same logits, every view
working): our own GPT, nanoGPT's GPT, Hugging Face causal LMs (GPT-2, Llama/SmolLM, Qwen2, GPT-NeoX). None for
anything else: the learner's own class, or TransformerLens's models (4's TransformerBridge rebuilds the modules of the
model it wraps), is then read from its forward pass (model_core.foreign.read_model)."""
from dataclasses import replace
from typing import Optional

from torch import nn

from model_core.checkpoints.convert_error import ConvertError
from model_core.checkpoints.hf import gpt_from_hf
from model_core.checkpoints.hf_families import family_for
from model_core.checkpoints.load_limits import LOCAL_LIMITS, bounded, model_from_tensors
from model_core.checkpoints.nanogpt import MODEL_ARGS, converted_state_dict, nanogpt_config, unprefixed, untied
from model_core.model.gpt import GPT


def exact_gpt(obj: nn.Module, block_size: Optional[int] = None) -> Optional[GPT]:
    """Our GPT (eval mode, its own float32 copy of the weights) computing what obj computes, or None when obj's
    family is not one the converters know. ConvertError when it is, but in a shape ours cannot build."""
    if isinstance(obj, GPT):
        return obj.copy().eval()
    for convert in (from_nanogpt, from_hugging_face):
        model = convert(obj, block_size)
        if model is not None:
            return model.eval()
    return None


def from_nanogpt(obj: nn.Module, block_size: Optional[int] = None) -> Optional[GPT]:
    """nanoGPT's model.GPT: a `config` with n_layer, n_head, n_embd, block_size, vocab_size and its state dict."""
    config = getattr(obj, "config", None)
    if not all(isinstance(getattr(config, k, None), int) for k in MODEL_ARGS) or "transformer" not in obj._modules:
        return None
    args = {k: getattr(config, k) for k in (*MODEL_ARGS, "bias")}
    weights = {k: v.detach().cpu() for k, v in unprefixed(obj.state_dict()).items()}
    cfg = nanogpt_config(args)
    if untied(weights, cfg):
        cfg = replace(cfg, tie_weights=False)
    return model_from_tensors(cfg, converted_state_dict(weights, bounded(cfg, LOCAL_LIMITS)), LOCAL_LIMITS)


def from_hugging_face(obj: nn.Module, block_size: Optional[int] = None) -> Optional[GPT]:
    """A transformers causal LM (PreTrainedModel): its config as config.json would hold it, and its tensors."""
    config = getattr(obj, "config", None)
    if not any(c.__name__ == "PreTrainedModel" for c in type(obj).__mro__) or not callable(getattr(config, "to_dict",
                                                                                                   None)):
        return None  # (transformers is not imported: the app does not depend on it)
    settings = config.to_dict()
    try:
        family_for(settings)
    except ConvertError:
        return None
    tensors = {k: v.detach().float().cpu() for k, v in obj.state_dict().items()}
    return gpt_from_hf(settings, tensors, block_size)
