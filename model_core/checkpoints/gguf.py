"""GGUF files (llama.cpp's format) -> ours: `python -m model_core.convert gguf FILE --out DIR`.

A GGUF file holds the weights (often quantised: Q4_1, Q8_0, ...), the architecture as metadata keys
("llama.block_count", ...) and the tokenizer (vocabulary, merges, special tokens, chat template). The `gguf`
package reads and dequantises it; the weights are renamed to Hugging Face's names and handed to the same
converter as a Hugging Face folder (model_core.checkpoints.hf), so both paths build the model one way.

llama.cpp stores a Llama model's q and k rows permuted for its interleaved rotary layout; they are put back
into Hugging Face's half-split order (the one our Rotary uses) here."""
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from model_core.checkpoints.checkpoint import Checkpoint
from model_core.checkpoints.nanogpt import ConvertError
from model_core.data.tokenization import BPETokenizer

ARCHITECTURES = {"llama": "llama", "qwen2": "qwen2"}  # GGUF general.architecture -> Hugging Face model_type
PERMUTED_ROPE = ("llama",)  # architectures whose q/k rows llama.cpp interleaves
MAX_GGUF_BYTES = 2_000_000_000  # refuse larger files before reading them (a CPU classroom's ceiling)
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


def load_gguf(path, block_size: Optional[int] = None) -> Checkpoint:
    """The model and tokenizer in a GGUF file, its weights dequantised to float32."""
    from model_core.checkpoints.hf import gpt_from_hf

    reader = open_gguf(Path(path))
    config = hf_config(reader)
    model = gpt_from_hf(config, hf_tensors(reader, config), block_size)  # ConvertError names a missing weight
    return Checkpoint(model, gguf_tokenizer(reader), corpus=f"pretrained: {metadata(reader, 'general.name', '?')}")


def open_gguf(path: Path):
    from gguf import GGUFReader

    if not path.is_file():
        raise ConvertError(f"no file at {path}: give the path of a .gguf file.")
    if path.stat().st_size > MAX_GGUF_BYTES:
        raise ConvertError(f"{path.name} is {path.stat().st_size / 1e9:.1f} GB, more than this app reads "
                           f"({MAX_GGUF_BYTES / 1e9:.0f} GB): use a smaller model.")
    try:
        return GGUFReader(path)
    except Exception as err:  # the reader raises ValueError, struct.error, ... on a file that is not GGUF
        raise ConvertError(f"{path.name} is not a readable GGUF file ({str(err)[:120]}).") from None


def metadata(reader, key: str, default=None):
    """One metadata value as plain Python (str, number, list), or default when the key is absent."""
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def hf_config(reader) -> dict:
    """The file's architecture as a Hugging Face config.json dict (the keys model_core.checkpoints.hf reads)."""
    arch = metadata(reader, "general.architecture")
    if arch not in ARCHITECTURES:
        raise ConvertError(f"GGUF architecture {arch!r} is not supported; supported: {', '.join(ARCHITECTURES)}.")

    def need(key):
        value = metadata(reader, f"{arch}.{key}")
        if value is None:
            raise ConvertError(f"the file lacks {arch}.{key}; it is incomplete.")
        return value

    n_heads, d_model = need("attention.head_count"), need("embedding_length")
    n_vocab = metadata(reader, f"{arch}.vocab_size") or len(reader.fields["tokenizer.ggml.tokens"].data)
    rope_dims = metadata(reader, f"{arch}.rope.dimension_count", d_model // n_heads)
    if rope_dims != d_model // n_heads:
        raise ConvertError(f"partial rotary ({rope_dims} of {d_model // n_heads} dimensions) is not supported "
                           "for GGUF files.")
    names = {t.name for t in reader.tensors}
    return {
        "model_type": ARCHITECTURES[arch], "vocab_size": int(n_vocab), "hidden_size": d_model,
        "num_hidden_layers": need("block_count"), "num_attention_heads": n_heads,
        "num_key_value_heads": metadata(reader, f"{arch}.attention.head_count_kv", n_heads),
        "intermediate_size": need("feed_forward_length"),
        "max_position_embeddings": need("context_length"),
        "rms_norm_eps": float(need("attention.layer_norm_rms_epsilon")),
        "rope_theta": float(metadata(reader, f"{arch}.rope.freq_base", 10000.0)),
        "tie_word_embeddings": "output.weight" not in names,
        "hidden_act": "silu",
    }


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


def gguf_tokenizer(reader) -> BPETokenizer:
    """The byte-level BPE tokenizer in the file's metadata (tokenizer.ggml.model 'gpt2'), special tokens
    (token type 3, 'control') kept whole, and its chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    kind = metadata(reader, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise ConvertError(f"tokenizer {kind!r} is not supported (only byte-level BPE, 'gpt2').")
    tokens = metadata(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in metadata(reader, "tokenizer.ggml.merges", [])]
    hf = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if metadata(reader, "tokenizer.ggml.pre") in DIGIT_SPLITTING_PRE:
        hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        hf.pre_tokenizer = byte_level
    hf.decoder = decoders.ByteLevel()
    types = metadata(reader, "tokenizer.ggml.token_type", [])
    hf.add_special_tokens([tokens[i] for i, kind in enumerate(types) if kind == 3])
    return BPETokenizer(hf, metadata(reader, "tokenizer.chat_template"))
