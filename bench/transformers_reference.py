"""Hugging Face transformers reading the same GGUF file its own way: the reference tests/test_smollm2.py checks
our logits against and bench.pretrained races. transformers is a dev dependency; the app never imports it."""
import os

import torch


def reference_model(path):
    """transformers' Llama on the weights transformers' own GGUF reader dequantises (and un-permutes), in eval mode,
    its unembedding tied to the embedding as the file says."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    config = load_gguf_checkpoint(str(path), return_tensors=False)["config"]
    config = LlamaConfig(**{k: v for k, v in config.items() if not k.startswith("_")})
    with torch.device("meta"):
        skeleton = LlamaForCausalLM(config)
    tensors = load_gguf_checkpoint(str(path), return_tensors=True, model_to_load=skeleton)["tensors"]
    reference = LlamaForCausalLM(config).eval()
    missing, unexpected = reference.load_state_dict(tensors, strict=False)
    if unexpected or not set(missing) <= {"lm_head.weight"}:  # tied to the embedding
        raise ValueError(f"transformers' model does not match the file: missing {missing}, unexpected {unexpected}")
    reference.generation_config.eos_token_id = None  # generate exactly the tokens asked for, as ours does
    return reference


@torch.inference_mode()
def reference_greedy(reference, prompt_ids, tokens: int) -> list[int]:
    """transformers' greedy generation with its KV cache: `tokens` new token ids."""
    out = reference.generate(torch.tensor([list(prompt_ids)]), max_new_tokens=tokens, do_sample=False,
                             use_cache=True, pad_token_id=0)
    return out[0, len(prompt_ids):].tolist()
