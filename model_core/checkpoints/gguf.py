"""GGUF files (llama.cpp's format) -> ours: `python -m model_core.convert gguf FILE --out DIR`.

A GGUF file holds the weights (often quantised: Q4_1, Q8_0, ...), the architecture as metadata keys
("llama.block_count", ...) and the tokenizer (vocabulary, merges, special tokens, chat template). The `gguf`
package reads and dequantises it; the weights are renamed to Hugging Face's names and handed to the same
converter as a Hugging Face folder (model_core.checkpoints.hf), so both paths build the model one way.

llama.cpp stores a Llama model's q and k rows permuted for its interleaved rotary layout; they are put back
into Hugging Face's half-split order (the one our Rotary uses) here.

Every size is checked before a weight is dequantised (a Q4 weight takes 8 times its bytes as float32): the
metadata's numbers (each of the type it must have) against LoadLimits on the meta device, then every tensor's
shape against them."""
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from model_core.checkpoints.checkpoint import Checkpoint
from model_core.checkpoints.convert_error import ConvertError
from model_core.checkpoints.load_limits import LOCAL_LIMITS, LoadLimits, bounded
from model_core.data.tokenization import BPETokenizer

ARCHITECTURES = {"llama": "llama", "qwen2": "qwen2"}  # GGUF general.architecture -> Hugging Face model_type
PERMUTED_ROPE = ("llama",)  # architectures whose q/k rows llama.cpp interleaves
LAYER_NAMES = {  # GGUF tensor name in block i -> Hugging Face name in layer i
    "attn_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight", "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight", "attn_output.weight": "self_attn.o_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias", "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.bias": "self_attn.v_proj.bias",
    "ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
GLOBAL_NAMES = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
                "output.weight": "lm_head.weight"}
# llama.cpp's pre-tokenizer names whose regex splits every digit on its own before GPT-2's byte-level split
DIGIT_SPLITTING_PRE = ("smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva")


def load_gguf(path, block_size: Optional[int] = None, limits: LoadLimits = LOCAL_LIMITS) -> Checkpoint:
    """The model and tokenizer in a GGUF file, its weights dequantised to float32 once their sizes were checked."""
    from model_core.checkpoints.hf import gpt_from_hf
    from model_core.checkpoints.hf_families import converted_state_dict, hf_gpt_config

    reader = open_gguf(Path(path), limits)
    config = hf_config(reader)
    cfg = hf_gpt_config(config, block_size)
    bounded(cfg, limits, context_flag=True)
    converted_state_dict(config, cfg, meta_tensors(reader))  # every shape, before anything is dequantised
    tokenizer = gguf_tokenizer(reader, cfg.vocab_size)
    model = gpt_from_hf(config, hf_tensors(reader, config), cfg.block_size, limits=limits)
    return Checkpoint(model, tokenizer, corpus=f"pretrained: {text(reader, 'general.name', '?')[:200]}")


def open_gguf(path: Path, limits: LoadLimits = LOCAL_LIMITS):
    from gguf import GGUFReader

    if not path.is_file():
        raise ConvertError(f"no file at {path}: give the path of a .gguf file.")
    if path.stat().st_size > limits.max_bytes:
        raise ConvertError(f"{path.name} is {path.stat().st_size / 1e9:.1f} GB, more than this app reads "
                           f"({limits.max_bytes / 1e9:.1f} GB): use a smaller model.")
    try:
        return GGUFReader(path)
    except Exception as err:  # the reader raises ValueError, struct.error, ... on a file that is not GGUF
        raise ConvertError(f"{path.name} is not a readable GGUF file ({str(err)[:120]}).") from None


def metadata(reader, key: str, default=None):
    """One metadata value as plain Python (str, number, list), or default when the key is absent."""
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def whole(reader, key: str, default=None) -> int:
    """A metadata value that must be a positive whole number (default when absent)."""
    value = metadata(reader, key, default)
    if value is None:
        raise ConvertError(f"the file lacks {key}; it is incomplete.")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConvertError(f"the file's {key} must be a positive whole number, got {str(value)[:40]!r}: the file "
                           "is damaged.")
    return value


def positive(reader, key: str, default=None) -> float:
    """A metadata value that must be a positive number (default when absent)."""
    value = metadata(reader, key, default)
    if value is None:
        raise ConvertError(f"the file lacks {key}; it is incomplete.")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ConvertError(f"the file's {key} must be a positive number, got {str(value)[:40]!r}: the file is damaged.")
    return float(value)


def text(reader, key: str, default: Optional[str] = None) -> Optional[str]:
    value = metadata(reader, key, default)
    if value is not None and not isinstance(value, str):
        raise ConvertError(f"the file's {key} must be text, got {str(value)[:40]!r}: the file is damaged.")
    return value


def texts(reader, key: str) -> list[str]:
    """A metadata list of strings ([] when absent)."""
    value = metadata(reader, key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConvertError(f"the file's {key} must be a list of texts: the file is damaged.")
    return value


def hf_config(reader) -> dict:
    """The file's architecture as a Hugging Face config.json dict (the keys model_core.checkpoints.hf reads),
    every number checked for its type."""
    arch = text(reader, "general.architecture")
    if arch not in ARCHITECTURES:
        raise ConvertError(f"GGUF architecture {str(arch)[:40]!r} is not supported; supported: "
                           f"{', '.join(ARCHITECTURES)}.")
    n_heads, d_model = whole(reader, f"{arch}.attention.head_count"), whole(reader, f"{arch}.embedding_length")
    n_vocab = whole(reader, f"{arch}.vocab_size", len(texts(reader, "tokenizer.ggml.tokens")) or None)
    rope_dims = whole(reader, f"{arch}.rope.dimension_count", max(1, d_model // n_heads))
    if rope_dims != d_model // n_heads:
        raise ConvertError(f"partial rotary ({rope_dims} of {d_model // n_heads} dimensions) is not supported "
                           "for GGUF files.")
    names = {t.name for t in reader.tensors}
    return {
        "model_type": ARCHITECTURES[arch], "vocab_size": n_vocab, "hidden_size": d_model,
        "num_hidden_layers": whole(reader, f"{arch}.block_count"), "num_attention_heads": n_heads,
        "num_key_value_heads": whole(reader, f"{arch}.attention.head_count_kv", n_heads),
        "intermediate_size": whole(reader, f"{arch}.feed_forward_length"),
        "max_position_embeddings": whole(reader, f"{arch}.context_length"),
        "rms_norm_eps": positive(reader, f"{arch}.attention.layer_norm_rms_epsilon"),
        "rope_theta": positive(reader, f"{arch}.rope.freq_base", 10000.0),
        "tie_word_embeddings": "output.weight" not in names,
        "hidden_act": "silu",
    }


def meta_tensors(reader) -> dict[str, torch.Tensor]:
    """Each weight the file holds as a meta tensor (its shape, no memory) under its Hugging Face name."""
    tensors = {}
    for t in reader.tensors:
        name = hf_name(t.name)
        if name is not None:  # GGUF lists dimensions innermost first: (in, out) for an (out, in) weight
            tensors[name] = torch.empty(tuple(int(n) for n in reversed(t.shape.tolist())), device="meta")
    return tensors


def hf_tensors(reader, config: dict) -> dict[str, torch.Tensor]:
    """Every tensor dequantised to float32 under its Hugging Face name, q/k rows back in HF order."""
    from gguf import quants

    tensors = {}
    for t in reader.tensors:
        name = hf_name(t.name)
        if name is None:
            continue  # e.g. rope_freqs.weight: the tables we compute
        array = np.asarray(quants.dequantize(t.data, t.tensor_type), dtype=np.float32)  # (out, in) or (n,)
        if not array.flags.writeable:  # a float32 tensor is a view of the read-only file mapping
            array = array.copy()
        if config["model_type"] in PERMUTED_ROPE and name.endswith(("q_proj.weight", "k_proj.weight")):
            heads = config["num_attention_heads"] if "q_proj" in name else config["num_key_value_heads"]
            array = unpermute_rows(array, heads)
        tensors[name] = torch.from_numpy(array)
    return tensors


def hf_name(gguf_name: str) -> Optional[str]:
    """'blk.3.attn_q.weight' -> 'model.layers.3.self_attn.q_proj.weight'; None for a tensor we do not use."""
    if gguf_name in GLOBAL_NAMES:
        return GLOBAL_NAMES[gguf_name]
    parts = gguf_name.split(".", 2)
    if len(parts) == 3 and parts[0] == "blk" and parts[2] in LAYER_NAMES:
        return f"model.layers.{parts[1]}.{LAYER_NAMES[parts[2]]}"
    return None


def unpermute_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's q/k permutation: within each head it stores rows as interleaved pairs (0, half, 1,
    half + 1, ...); Hugging Face keeps the first half of the rotated pairs, then the second. (out, in)"""
    out = w.shape[0]
    return w.reshape(n_heads, out // n_heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_tokenizer(reader, vocab_size: int) -> BPETokenizer:
    """The byte-level BPE tokenizer in the file's metadata (tokenizer.ggml.model 'gpt2'), special tokens
    (token type 3, 'control') kept whole, and its chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    from model_core.data.chat import checked_template
    from model_core.data.native_errors import native_call

    kind = text(reader, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise ConvertError(f"tokenizer {str(kind)[:40]!r} is not supported (only byte-level BPE, 'gpt2').")
    tokens, merges = texts(reader, "tokenizer.ggml.tokens"), texts(reader, "tokenizer.ggml.merges")
    types = metadata(reader, "tokenizer.ggml.token_type", [])
    if not 0 < len(tokens) <= vocab_size or len(merges) > 2 * vocab_size or not isinstance(types, list):
        raise ConvertError(f"the file's tokenizer has {len(tokens):,} tokens and {len(merges):,} merges for a model "
                           f"of {vocab_size:,} token ids: the file is damaged.")
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    if any(len(pair) != 2 for pair in pairs):
        raise ConvertError("the file's tokenizer.ggml.merges are not pairs of tokens: the file is damaged.")
    with native_call("reading the file's tokenizer", ConvertError):
        hf = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=pairs))
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        if text(reader, "tokenizer.ggml.pre") in DIGIT_SPLITTING_PRE:
            hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
        else:
            hf.pre_tokenizer = byte_level
        hf.decoder = decoders.ByteLevel()
        hf.add_special_tokens([tokens[i] for i, kind in enumerate(types[:len(tokens)]) if kind == 3])
    try:
        template = checked_template(text(reader, "tokenizer.chat_template"))
    except ValueError as err:
        raise ConvertError(f"{err} (in the file's tokenizer.chat_template)") from None
    return BPETokenizer(hf, template)
