"""GGUF files -> ours: a tiny random Llama written as llama.cpp writes it (q/k rows permuted for its rotary
layout, tokenizer and chat template in the metadata) reads back to the reference implementation's logits."""
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import json

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType, GGUFWriter, quants
from transformers import LlamaConfig, LlamaForCausalLM

from model_core.checkpoints.convert_error import ConvertError
from model_core.checkpoints.gguf import load_gguf, unpermute_rows
from model_core.convert import main
from model_core.data.chat import chat_prompt
from model_core.data.tokenization import BPETokenizer

pytestmark = pytest.mark.slow

VOCAB, D, HEADS, KV, LAYERS, MLP = 300, 64, 4, 2, 2, 96
TEXT = "the quick brown fox jumps over the lazy dog 123. " * 20
TEMPLATE = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}" \
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"


def permute_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's convert script: each head's rows as interleaved pairs (the inverse of unpermute_rows)."""
    return w.reshape(n_heads, 2, w.shape[0] // n_heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


@pytest.fixture(scope="module")
def reference():
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(hidden_size=D, num_attention_heads=HEADS, num_key_value_heads=KV,
                                         intermediate_size=MLP, num_hidden_layers=LAYERS, vocab_size=VOCAB,
                                         max_position_embeddings=128, rope_theta=500.0, rms_norm_eps=1e-5,
                                         tie_word_embeddings=False)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.2)
    return model


def write_gguf(path, model, quantise: bool = False) -> BPETokenizer:
    """The model as a GGUF file in llama.cpp's layout; returns the tokenizer written into it."""
    tokenizer = BPETokenizer.train(TEXT, VOCAB - 2)
    tokenizer.hf.add_special_tokens(["<|im_start|>", "<|im_end|>"])
    spec = json.loads(tokenizer.hf.to_str())["model"]
    tokens = sorted(spec["vocab"], key=spec["vocab"].get) + ["<|im_start|>", "<|im_end|>"]
    tokens += [f"<|unused_{i}|>" for i in range(VOCAB - len(tokens))]  # llama.cpp pads to the embedding's rows
    writer = GGUFWriter(str(path), "llama")
    for key, value in [("block_count", LAYERS), ("context_length", 128), ("embedding_length", D),
                       ("feed_forward_length", MLP), ("head_count", HEADS), ("head_count_kv", KV)]:
        getattr(writer, f"add_{key}")(value)
    writer.add_rope_freq_base(500.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in spec["merges"]])
    n = tokenizer.vocab_size
    writer.add_token_types([1] * (n - 2) + [3, 3] + [5] * (VOCAB - n))
    writer.add_chat_template(TEMPLATE)
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    ours = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
            "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
            "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for name, tensor in model.state_dict().items():
        w = tensor.numpy().astype(np.float32)
        if name in names:
            gguf_name = names[name]
        else:
            layer, rest = name.split(".")[2], ".".join(name.split(".")[3:-1])
            gguf_name = f"blk.{layer}.{ours[rest]}.weight"
        if "q_proj" in name or "k_proj" in name:
            w = permute_rows(w, HEADS if "q_proj" in name else KV)
        if quantise and w.ndim == 2:
            writer.add_tensor(gguf_name, quants.quantize(w, GGMLQuantizationType.Q8_0),
                              raw_dtype=GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(gguf_name, w)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tokenizer


def test_unpermute_undoes_the_permutation():
    w = np.arange(8 * 16 * 3, dtype=np.float32).reshape(8 * 16 // 8 * 8, 3)
    assert np.array_equal(unpermute_rows(permute_rows(w, 4), 4), w)
    assert not np.array_equal(permute_rows(w, 4), w)


def test_logits_equal_the_reference(reference, tmp_path):
    tokenizer = write_gguf(tmp_path / "tiny.gguf", reference)
    ckpt = load_gguf(tmp_path / "tiny.gguf")
    cfg = ckpt.model.cfg
    assert (cfg.n_heads, cfg.kv_heads, cfg.rope_base, cfg.tie_weights, cfg.block_size) == (HEADS, KV, 500.0, False, 128)
    ids = torch.randint(0, VOCAB, (2, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert (ckpt.model(ids)[0] - reference(ids).logits).abs().max() < 1e-4
    text = "the lazy fox 12"
    assert ckpt.tokenizer.encode(text) == tokenizer.encode(text)
    message = chat_prompt(ckpt.tokenizer.chat_template, "hi")
    assert message == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert ckpt.tokenizer.encode(message)[0] == tokenizer.vocab_size - 2  # a special token stays whole


def test_quantised_weights_are_dequantised(reference, tmp_path):
    write_gguf(tmp_path / "q8.gguf", reference, quantise=True)
    ckpt = load_gguf(tmp_path / "q8.gguf")
    ids = torch.randint(0, VOCAB, (1, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        diff = (ckpt.model(ids)[0] - reference(ids).logits).abs().max()
    assert 0 < diff < 0.05  # 8-bit weights: close to the float model, not equal


def test_cli_and_bad_files(reference, tmp_path, capsys):
    write_gguf(tmp_path / "tiny.gguf", reference)
    assert main(["gguf", str(tmp_path / "tiny.gguf"), "--out", str(tmp_path / "out"), "--block-size", "64"]) == 0
    assert "2 layers x 4 heads (2 key/value)" in capsys.readouterr().out
    (tmp_path / "bad.gguf").write_bytes(b"not a gguf file at all")
    assert main(["gguf", str(tmp_path / "bad.gguf"), "--out", str(tmp_path / "o2")]) == 1
    assert "not a readable GGUF file" in capsys.readouterr().err
    with pytest.raises(ConvertError, match="no file at"):
        load_gguf(tmp_path / "missing.gguf")
