"""Hugging Face model families in our terms: config.json -> GPTConfig, HF tensors -> our state dict.

  gpt2      learned positions, LayerNorm with bias, gelu_new (our gelu_tanh), tied unembedding; its Conv1D
            weights are stored (in, out), the transpose of nn.Linear's
  llama     RMSNorm, rope, grouped-query attention, SwiGLU, no biases (SmolLM, TinyLlama)
  qwen2     llama with biases on q, k and v
  gpt_neox  LayerNorm with bias, partial rotary, parallel attention and FFN, q|k|v packed per head (Pythia)

Every variant outside these (scaled rope, sliding windows, other biases) is refused with a ConvertError that
says which setting. The tensor maps run alike on meta tensors, so shapes are checked before weights are read."""
import re
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

import torch

from model_core.checkpoints.convert_error import ConvertError
from model_core.model.config import ConfigError, GPTConfig

DEFAULT_MAX_BLOCK = 1024  # default block_size: the model's own context, at most this (a CPU classroom reads less)
# Older files also saved buffers: attention masks and rope frequency tables, recomputed by every model
BUFFERS = re.compile(r"\.(attn|attention)\.(bias|masked_bias)$|\.rotary_emb\.inv_freq$")
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
REFUSED = "it cannot be converted"


# ---------------------------------------------------------------- config.json -> GPTConfig

def whole(config: dict, key: str, default=None) -> int:
    """config[key] (default when absent or null) as a positive whole number."""
    value = default if config.get(key) is None else config[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConvertError(f"config.json's {key} must be a positive whole number, got {str(value)[:40]!r}.")
    return value


def number(value, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConvertError(f"config.json's {key} must be a positive number, got {str(value)[:40]!r}.")
    return float(value)


def flag(config: dict, key: str, default: bool) -> bool:
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise ConvertError(f"config.json's {key} must be true or false, got {str(value)[:40]!r}.")
    return value


def require(config: dict, key: str, default, wanted, why: str) -> None:
    """ConvertError unless config[key] (default when absent) is wanted: a variant this app does not build."""
    if config.get(key, default) != wanted:
        raise ConvertError(f"config.json sets {key} to {str(config.get(key))[:40]!r}, and {why}: {REFUSED}.")


def activation(config: dict, key: str, default: str) -> str:
    name = config.get(key, default)
    if name not in ACTIVATIONS:
        raise ConvertError(f"config.json's {key} is {str(name)[:40]!r}; this app has {', '.join(ACTIVATIONS)} "
                           f"(and silu in SwiGLU): {REFUSED}.")
    return ACTIVATIONS[name]


def max_positions(config: dict) -> int:
    """The longest context the model was trained on."""
    if config.get("model_type") == "gpt2":
        return whole(config, "n_positions", config.get("n_ctx", 1024))
    return whole(config, "max_position_embeddings", 2048)


def chosen_block_size(config: dict, block_size: Optional[int]) -> int:
    longest = max_positions(config)
    if block_size is None:
        return min(longest, DEFAULT_MAX_BLOCK)
    if isinstance(block_size, bool) or not isinstance(block_size, int) or not 1 <= block_size <= longest:
        raise ConvertError(f"block_size must be a whole number from 1 to {longest} (the longest context this "
                           f"model was trained on), got {block_size!r}.")
    return block_size


def rope_parameters(config: dict) -> dict:
    """Rope settings: rope_parameters (transformers 5) or rope_scaling (earlier, null for plain rope).
    ConvertError for scaled rope (linear, dynamic, yarn, llama3, ...), which our Rotary does not implement."""
    params = config.get("rope_parameters") or config.get("rope_scaling") or {}
    if not isinstance(params, dict) or any(isinstance(v, (dict, list)) for v in params.values()):
        raise ConvertError(f"config.json's rope settings are not one plain set of numbers (rope per layer type?): "
                           f"this app implements plain rope only, so {REFUSED}.")
    kind = params.get("rope_type", params.get("type", "default"))
    if kind != "default":
        raise ConvertError(f"the model uses {str(kind)[:40]!r} rope scaling; this app implements plain rope only "
                           f"(one frequency per pair), so {REFUSED}.")
    return params


def gpt2_config(config: dict, block_size: int) -> GPTConfig:
    require(config, "scale_attn_weights", True, True, "this app always divides scores by sqrt(d_head)")
    require(config, "scale_attn_by_inverse_layer_idx", False, False, "this app scales every layer alike")
    require(config, "add_cross_attention", False, False, "this app builds decoder-only models")
    d_model = whole(config, "n_embd")
    return GPTConfig(vocab_size=whole(config, "vocab_size"), block_size=block_size, d_model=d_model,
                     n_heads=whole(config, "n_head"), n_layers=whole(config, "n_layer"),
                     d_mlp=whole(config, "n_inner", 4 * d_model),
                     activation=activation(config, "activation_function", "gelu_new"), norm="layernorm",
                     norm_eps=number(config.get("layer_norm_epsilon", 1e-5), "layer_norm_epsilon"),
                     positional="learned", tie_weights=flag(config, "tie_word_embeddings", True), bias=True,
                     qkv_bias=True, unembed_bias=False)


def llama_config(config: dict, block_size: int, qkv_bias: bool = False) -> GPTConfig:
    require(config, "hidden_act", "silu", "silu", "this app's SwiGLU gates with silu")
    require(config, "attention_bias", False, False, "this app has no o_proj bias without MLP biases")
    require(config, "mlp_bias", False, False, "this app has no MLP biases without LayerNorm")
    d_model, n_heads = whole(config, "hidden_size"), whole(config, "num_attention_heads")
    if config.get("head_dim") not in (None, d_model // n_heads):
        raise ConvertError(f"config.json's head_dim ({str(config['head_dim'])[:20]}) is not hidden_size / "
                           f"num_attention_heads ({d_model} / {n_heads}), which this app's attention needs: {REFUSED}.")
    theta = rope_parameters(config).get("rope_theta", config.get("rope_theta", 10000.0))
    return GPTConfig(vocab_size=whole(config, "vocab_size"), block_size=block_size, d_model=d_model, n_heads=n_heads,
                     n_kv_heads=whole(config, "num_key_value_heads", n_heads), n_layers=whole(config, "num_hidden_layers"),
                     d_mlp=whole(config, "intermediate_size"), activation="swiglu", norm="rmsnorm",
                     norm_eps=number(config.get("rms_norm_eps", 1e-6), "rms_norm_eps"), positional="rope",
                     rope_base=number(theta, "rope_theta"), tie_weights=flag(config, "tie_word_embeddings", False),
                     bias=False, qkv_bias=qkv_bias, unembed_bias=False)


def qwen2_config(config: dict, block_size: int) -> GPTConfig:
    layer_types = config.get("layer_types") or []  # transformers 5: one entry per layer
    if flag(config, "use_sliding_window", False) or not isinstance(layer_types, list) or \
            any(t != "full_attention" for t in layer_types):
        raise ConvertError(f"config.json turns on sliding-window attention; this app attends over the whole "
                           f"context, so {REFUSED}.")
    return llama_config(config, block_size, qkv_bias=True)


def neox_config(config: dict, block_size: int) -> GPTConfig:
    require(config, "attention_bias", True, True, "this app has MLP biases only with attention biases")
    d_model, n_heads = whole(config, "hidden_size"), whole(config, "num_attention_heads")
    rope = rope_parameters(config)
    fraction = number(rope.get("partial_rotary_factor", config.get("rotary_pct", 0.25)), "rotary_pct")
    rotary_dims = int(d_model // n_heads * fraction)  # rounded down, as Hugging Face does
    theta = rope.get("rope_theta", config.get("rotary_emb_base", 10000.0))
    return GPTConfig(vocab_size=whole(config, "vocab_size"), block_size=block_size, d_model=d_model, n_heads=n_heads,
                     n_layers=whole(config, "num_hidden_layers"), d_mlp=whole(config, "intermediate_size"),
                     activation=activation(config, "hidden_act", "gelu"), norm="layernorm",
                     norm_eps=number(config.get("layer_norm_eps", 1e-5), "layer_norm_eps"),
                     parallel_blocks=flag(config, "use_parallel_residual", True), positional="rope",
                     rope_base=number(theta, "rotary_emb_base"),
                     rotary_dims=None if rotary_dims == d_model // n_heads else rotary_dims,
                     tie_weights=flag(config, "tie_word_embeddings", False), bias=True, qkv_bias=True,
                     unembed_bias=False)


# ---------------------------------------------------------------- HF tensors -> our state dict

class HFTensors:
    """Hugging Face tensors by name, each taken once with the shape config.json implies; any left over is an
    error. Works alike on meta tensors (shapes from the safetensors headers): a folder is checked before it is read."""

    def __init__(self, tensors: Mapping[str, torch.Tensor]):
        self.tensors, self.taken = tensors, set()

    def take(self, name: str, *shape: int) -> torch.Tensor:
        """The tensor called name, as float32, which must have this shape."""
        tensor = self.tensors.get(name)
        if tensor is None:
            raise ConvertError(f"the weights lack {name}, which config.json implies: the weight files are "
                               "incomplete or belong to another model.")
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            raise ConvertError(f"{name} is not a floating-point tensor; quantized weights cannot be converted.")
        if tuple(tensor.shape) != shape:
            raise ConvertError(f"{name} has shape {tuple(tensor.shape)} but config.json implies {shape}: the "
                               "weights and config.json belong to different models.")
        if tensor.device.type != "meta" and not torch.isfinite(tensor).all():
            raise ConvertError(f"{name} contains NaN or infinity; the model is unusable.")
        self.taken.add(name)
        return tensor.float()

    def skip(self, name: str) -> None:
        """Accept name without using it."""
        self.taken.add(name)

    def check_all_taken(self, model_type: str) -> None:
        extra = sorted(set(self.tensors) - self.taken)
        if extra:
            raise ConvertError(f"the weights hold {len(extra)} tensors a {model_type} model with this config.json "
                               f"does not have (such as {extra[0][:80]}): it is a variant this converter does not know.")


def params(t: HFTensors, theirs: str, ours: str, shape: tuple, bias: bool) -> dict:
    """{ours.weight, ours.bias}: an nn.Linear (out, in) or a norm (width,), stored alike by both."""
    state = {f"{ours}.weight": t.take(f"{theirs}.weight", *shape)}
    if bias:
        state[f"{ours}.bias"] = t.take(f"{theirs}.bias", shape[0])
    return state


def conv1d(t: HFTensors, theirs: str, ours: str, n_in: int, n_out: int) -> dict:
    """GPT-2's Conv1D stores its weight (in, out), the transpose of nn.Linear's (out, in)."""
    return {f"{ours}.weight": t.take(f"{theirs}.weight", n_in, n_out).T, f"{ours}.bias": t.take(f"{theirs}.bias", n_out)}


def unembedding(t: HFTensors, cfg: GPTConfig, name: str) -> dict:
    if cfg.tie_weights:
        t.skip(name)  # some exporters save the tied copy too; Hugging Face ties it to the embedding, as we do
        return {}
    return {"unembed.weight": t.take(name, cfg.vocab_size, cfg.d_model)}


def qkv_from_per_head(w: torch.Tensor, n_heads: int, d_head: int) -> torch.Tensor:
    """GPT-NeoX's query_key_value rows, grouped per head as (H, 3, dh), -> ours: [all q | all k | all v]."""
    return w.reshape(n_heads, 3, d_head, -1).transpose(0, 1).reshape(w.shape)  # (3 H dh, D) or (3 H dh,)


def gpt2_state(config: dict, cfg: GPTConfig, t: HFTensors) -> dict:
    V, D, M = cfg.vocab_size, cfg.d_model, cfg.d_mlp
    state = {"embed.weight": t.take("transformer.wte.weight", V, D),
             # (block, D): the first block_size rows of the (n_positions, D) table
             "pos_embed.weight": t.take("transformer.wpe.weight", max_positions(config), D)[:cfg.block_size],
             **params(t, "transformer.ln_f", "ln_final.norm", (D,), True), **unembedding(t, cfg, "lm_head.weight")}
    for i in range(cfg.n_layers):
        theirs, ours = f"transformer.h.{i}.", f"blocks.{i}."
        state |= params(t, theirs + "ln_1", ours + "ln1.norm", (D,), True)
        state |= conv1d(t, theirs + "attn.c_attn", ours + "attn.W_qkv", D, 3 * D)  # [q | k | v], like ours
        state |= conv1d(t, theirs + "attn.c_proj", ours + "attn.W_o", D, D)
        state |= params(t, theirs + "ln_2", ours + "ln2.norm", (D,), True)
        state |= conv1d(t, theirs + "mlp.c_fc", ours + "mlp.W_in", D, M)
        state |= conv1d(t, theirs + "mlp.c_proj", ours + "mlp.W_out", M, D)
    return state


def llama_state(config: dict, cfg: GPTConfig, t: HFTensors) -> dict:
    """Llama and Qwen2: q, k, v projections stacked into our W_qkv; gate, up, down are W_gate, W_in, W_out."""
    V, D, M, dh = cfg.vocab_size, cfg.d_model, cfg.d_mlp, cfg.d_head
    state = {"embed.weight": t.take("model.embed_tokens.weight", V, D),
             **params(t, "model.norm", "ln_final.norm", (D,), False), **unembedding(t, cfg, "lm_head.weight")}
    for i in range(cfg.n_layers):
        theirs, ours = f"model.layers.{i}.", f"blocks.{i}."
        projections = [f"{theirs}self_attn.{p}_proj" for p in "qkv"]
        rows = (cfg.n_heads * dh, cfg.kv_heads * dh, cfg.kv_heads * dh)  # H query heads, Hkv key and value heads
        qkv = [t.take(p + ".weight", n, D) for p, n in zip(projections, rows)]
        state[ours + "attn.W_qkv.weight"] = torch.cat(qkv)  # ((H + 2 Hkv) dh, D): [q heads | k heads | v heads]
        if cfg.has_qkv_bias:
            state[ours + "attn.W_qkv.bias"] = torch.cat([t.take(p + ".bias", n) for p, n in zip(projections, rows)])
        state |= params(t, theirs + "input_layernorm", ours + "ln1.norm", (D,), False)
        state |= params(t, theirs + "self_attn.o_proj", ours + "attn.W_o", (D, D), False)
        state |= params(t, theirs + "post_attention_layernorm", ours + "ln2.norm", (D,), False)
        state |= params(t, theirs + "mlp.gate_proj", ours + "mlp.W_gate", (M, D), False)
        state |= params(t, theirs + "mlp.up_proj", ours + "mlp.W_in", (M, D), False)
        state |= params(t, theirs + "mlp.down_proj", ours + "mlp.W_out", (D, M), False)
    return state


def neox_state(config: dict, cfg: GPTConfig, t: HFTensors) -> dict:
    V, D, M = cfg.vocab_size, cfg.d_model, cfg.d_mlp
    state = {"embed.weight": t.take("gpt_neox.embed_in.weight", V, D),
             **params(t, "gpt_neox.final_layer_norm", "ln_final.norm", (D,), True),
             **unembedding(t, cfg, "embed_out.weight")}
    for i in range(cfg.n_layers):
        theirs, ours = f"gpt_neox.layers.{i}.", f"blocks.{i}."
        qkv = params(t, theirs + "attention.query_key_value", ours + "attn.W_qkv", (3 * D, D), True)
        state |= {name: qkv_from_per_head(w, cfg.n_heads, cfg.d_head) for name, w in qkv.items()}
        state |= params(t, theirs + "input_layernorm", ours + "ln1.norm", (D,), True)
        state |= params(t, theirs + "attention.dense", ours + "attn.W_o", (D, D), True)
        state |= params(t, theirs + "post_attention_layernorm", ours + "ln2.norm", (D,), True)
        state |= params(t, theirs + "mlp.dense_h_to_4h", ours + "mlp.W_in", (M, D), True)
        state |= params(t, theirs + "mlp.dense_4h_to_h", ours + "mlp.W_out", (D, M), True)
    return state


@dataclass(frozen=True)
class Family:
    config: Callable[[dict, int], GPTConfig]  # config.json and block_size -> our GPTConfig
    state: Callable[[dict, GPTConfig, HFTensors], dict]  # config.json, our config, HF tensors -> our state dict
    rename: Callable[[str], str] = lambda name: name  # a tensor name as files spell it -> as state() does


FAMILIES = {
    # the Hub's own gpt2 files were saved from GPT2Model, without the "transformer." prefix
    "gpt2": Family(gpt2_config, gpt2_state,
                   lambda name: name if name.startswith(("transformer.", "lm_head.")) else "transformer." + name),
    "llama": Family(llama_config, llama_state),
    "qwen2": Family(qwen2_config, llama_state),
    # transformers 5 calls Pythia's embed_out lm_head in memory
    "gpt_neox": Family(neox_config, neox_state, lambda name: "embed_out.weight" if name == "lm_head.weight" else name),
}


def family_for(config: dict) -> Family:
    kind = config.get("model_type")
    if kind not in FAMILIES:
        raise ConvertError(f"config.json's model_type is {str(kind)[:40]!r}; this converter knows "
                           f"{', '.join(FAMILIES)} (GPT-2, Llama / SmolLM / TinyLlama, Qwen2, GPT-NeoX / Pythia).")
    return FAMILIES[kind]


def hf_gpt_config(config: dict, block_size: Optional[int] = None) -> GPTConfig:
    """Our GPTConfig for a parsed config.json; ConvertError for an unknown family or a variant we do not build."""
    if not isinstance(config, dict):
        raise ConvertError("config.json must hold a JSON object; this is not a Hugging Face model config.")
    family = family_for(config)
    try:
        return family.config(config, chosen_block_size(config, block_size))
    except ConfigError as err:
        raise ConvertError(f"config.json describes a model this app cannot build: {err}") from None


def converted_state_dict(config: dict, cfg: GPTConfig, tensors: Mapping[str, torch.Tensor]) -> dict:
    """HF tensors (real or meta) -> our state dict (a tied unembedding left out); ConvertError for a missing,
    extra or misshapen tensor."""
    family = family_for(config)
    kept = [name for name in tensors if not BUFFERS.search(name)]
    renamed = {family.rename(name): tensors[name] for name in kept}
    if len(renamed) < len(kept):
        raise ConvertError("the weights hold some tensors twice, with and without the model's name prefix.")
    t = HFTensors(renamed)
    state = family.state(config, cfg, t)
    t.check_all_taken(config["model_type"])
    return state
