"""Hugging Face folders -> ours: tiny random models of each family, built and saved with transformers (the
reference implementation), give the same logits after conversion; bad folders give messages, not tracebacks."""
import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the Hub: every model here is built locally

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from model_core.checkpoints.checkpoint import load_checkpoint, save_checkpoint
from model_core.checkpoints.convert_error import ConvertError
from model_core.checkpoints.hf import gpt_from_hf, load_hf_folder
from model_core.convert import main
from model_core.data.tokenization import BPETokenizer
from tests.helpers import extended_logits

VOCAB = 300  # the tokenizer's size; qwen2's embedding is rounded up past it, as real models' often are
TEXT = "the quick brown fox jumps over the lazy dog. " * 20 + "a tiny model reads tiny text, then writes more. " * 20
SMALL = dict(hidden_size=64, num_attention_heads=4, intermediate_size=96, num_hidden_layers=2,
             max_position_embeddings=64)
MODELS = {  # name -> a tiny random transformers model; each exercises a different option
    "llama": lambda: LlamaForCausalLM(LlamaConfig(**SMALL, num_key_value_heads=2, vocab_size=VOCAB, rope_theta=500.0,
                                                  rms_norm_eps=1e-5, tie_word_embeddings=True)),
    "qwen2": lambda: Qwen2ForCausalLM(Qwen2Config(**SMALL, num_key_value_heads=1, vocab_size=VOCAB + 4,
                                                  tie_word_embeddings=False)),
    "neox_parallel": lambda: GPTNeoXForCausalLM(GPTNeoXConfig(**SMALL, vocab_size=VOCAB, rotary_pct=0.25,
                                                              rotary_emb_base=1000, use_parallel_residual=True)),
    "neox_sequential": lambda: GPTNeoXForCausalLM(GPTNeoXConfig(**SMALL, vocab_size=VOCAB, rotary_pct=0.5,
                                                                use_parallel_residual=False)),
    "gpt2": lambda: GPT2LMHeadModel(GPT2Config(n_embd=64, n_head=4, n_layer=2, n_positions=64, vocab_size=VOCAB,
                                                  bos_token_id=None, eos_token_id=None)),
}
CACHED = ("llama", "qwen2", "neox_parallel", "neox_sequential")  # grouped-query, parallel, partial rotary


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory) -> str:
    tokenizer = BPETokenizer.train(TEXT, VOCAB)
    assert tokenizer.vocab_size == VOCAB
    return tokenizer.hf.to_str()


def sharp(model):
    """model with random weights of std 0.2 (norm gains 1 +- 0.2): the default init gives near-uniform logits,
    where a wrong layout would hide."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            gain = p.ndim == 1 and name.endswith("weight")
            p.copy_(torch.randn(p.shape, generator=gen) * 0.2 + gain)
    return model.eval()


def write_folder(folder, name: str, tokenizer_json: str, **save):
    torch.manual_seed(0)
    model = sharp(MODELS[name]())
    model.save_pretrained(folder, safe_serialization=True, **save)
    (folder / "tokenizer.json").write_text(tokenizer_json)
    return model


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tokenizer_json) -> dict:
    """name -> (transformers model, its saved folder)."""
    out = {}
    for name in MODELS:
        folder = tmp_path_factory.mktemp(name)
        out[name] = write_folder(folder, name, tokenizer_json), folder
    (out["llama"][1] / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    return out


@pytest.fixture(scope="module")
def converted(folders) -> dict:
    return {name: load_hf_folder(folder) for name, (_, folder) in folders.items()}


def ids(vocab: int, T: int = 20) -> torch.Tensor:
    return torch.randint(0, vocab, (2, T), generator=torch.Generator().manual_seed(1))  # (2, T)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_logits_equal_transformers(name, folders, converted):
    hf_model, _ = folders[name]
    model = converted[name].model
    idx = ids(model.cfg.vocab_size)
    with torch.no_grad():
        expected = hf_model(idx).logits  # (2, T, V)
        ours, _ = model(idx)
    assert expected.std() > 0.5  # far from uniform: a wrong layout would show
    diff = (ours - expected).abs().max().item()
    print(f"{name}: max |logit difference| {diff:.2e}")
    assert diff < 1e-4


@pytest.mark.slow
def test_config_options_are_read(converted):
    llama, qwen, neox, seq = (converted[n].model.cfg for n in ("llama", "qwen2", "neox_parallel", "neox_sequential"))
    assert (llama.n_kv_heads, llama.rope_base, llama.norm_eps, llama.tie_weights) == (2, 500.0, 1e-5, True)
    assert (qwen.n_kv_heads, qwen.has_qkv_bias, qwen.bias, qwen.tie_weights) == (1, True, False, False)
    assert (neox.rotary_dims, neox.rope_base, neox.parallel_blocks, seq.rotary_dims, seq.parallel_blocks) == \
        (4, 1000.0, True, 8, False)
    assert converted["gpt2"].model.cfg.activation == "gelu_tanh" and llama.block_size == 64


@pytest.mark.slow
@pytest.mark.parametrize("name", CACHED)
def test_kv_cache_path_equals_the_full_forward(name, converted):
    model = converted[name].model
    idx = ids(model.cfg.vocab_size)
    with torch.no_grad():
        full, _ = model(idx)
        torch.testing.assert_close(extended_logits(model, idx, [8, 1, 1, 5, 5]), full, atol=1e-5, rtol=1e-5)


def test_hook_shapes_of_a_grouped_query_model(converted):
    model = converted["llama"].model  # 4 query heads sharing 2 key/value heads of 16 dims
    _, cache = model.run_with_cache(ids(VOCAB, T=9))
    assert cache["blocks.0.attn.hook_q"].shape == (2, 9, 4, 16)
    assert cache["blocks.1.attn.hook_k"].shape == cache["blocks.1.attn.hook_v"].shape == (2, 9, 2, 16)
    pattern = cache["blocks.1.attn.hook_pattern"]  # (batch, head, query, key)
    assert pattern.shape == (2, 4, 9, 9)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(2, 4, 9))


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_checkpoint_round_trip_keeps_the_logits(name, converted, tmp_path):
    ckpt = converted[name]
    loaded = load_checkpoint(save_checkpoint(ckpt, tmp_path / "ckpt"))
    idx = ids(ckpt.model.cfg.vocab_size)
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(idx)[0], ckpt.model(idx)[0], atol=0, rtol=0)
    assert loaded.model.cfg == ckpt.model.cfg and loaded.tokenizer.chat_template == ckpt.tokenizer.chat_template


def test_tokenizer_labels_chat_template_and_padding(converted):
    llama, qwen = converted["llama"].tokenizer, converted["qwen2"].tokenizer
    labels = [llama.token_label(i) for i in range(llama.vocab_size)]
    assert not any("Ġ" in label for label in labels) and any(label.startswith("␣") for label in labels)
    assert llama.decode(llama.encode("the lazy fox")) == "the lazy fox"
    assert llama.chat_template == "{{ messages }}" and qwen.chat_template is None
    # qwen2's embedding has 4 rows more than the tokenizer has tokens: placeholders label them
    assert qwen.vocab_size == VOCAB + 4 and qwen.token_label(VOCAB + 3) == f"<|unused_{VOCAB + 3}|>"


def test_sharded_weights_and_old_style_configs(tmp_path, tokenizer_json):
    llama = write_folder(tmp_path / "sharded", "llama", tokenizer_json, max_shard_size="40KB")
    assert (tmp_path / "sharded" / "model.safetensors.index.json").is_file()
    neox = write_folder(tmp_path / "old", "neox_parallel", tokenizer_json)
    config = json.loads((tmp_path / "old" / "config.json").read_text())  # as Pythia's own config.json says it
    config |= {"rotary_pct": 0.25, "rotary_emb_base": 1000}
    del config["rope_parameters"]
    (tmp_path / "old" / "config.json").write_text(json.dumps(config))
    for hf_model, folder in ((llama, "sharded"), (neox, "old")):
        idx = ids(VOCAB)
        with torch.no_grad():
            diff = (load_hf_folder(tmp_path / folder).model(idx)[0] - hf_model(idx).logits).abs().max()
        assert diff < 1e-4


def test_gpt2_names_without_the_transformer_prefix(folders):
    """The Hub's own gpt2 weights were saved from GPT2Model: h.0.attn..., wte.weight."""
    hf_model, folder = folders["gpt2"]
    config = json.loads((folder / "config.json").read_text())
    tensors = {k.removeprefix("transformer."): v for k, v in load_file(folder / "model.safetensors").items()}
    model = gpt_from_hf(config, tensors, block_size=32)
    idx = ids(VOCAB, T=32)
    with torch.no_grad():
        assert (model(idx)[0] - hf_model(idx).logits).abs().max() < 1e-4
    assert model.pos_embed.weight.shape == (32, 64)


@pytest.mark.slow
def test_cli_writes_a_checkpoint_and_a_summary(folders, tmp_path, capsys):
    assert main(["hf", str(folders["qwen2"][1]), "--out", str(tmp_path / "out"), "--block-size", "32"]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "2 layers x 4 heads (1 key/value)" in out and "context 32" in out
    assert load_checkpoint(tmp_path / "out").model.cfg.block_size == 32


def edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | changes))


def edit_weights(folder, change):
    tensors = load_file(folder / "model.safetensors")
    change(tensors)
    save_file(tensors, folder / "model.safetensors")


BAD = {  # what is wrong with the folder -> (how to make it so, the message's key words)
    "no config.json": (lambda f: (f / "config.json").unlink(), "no config.json"),
    "unknown family": (lambda f: edit_config(f, model_type="mamba"), "model_type is 'mamba'"),
    "scaled rope": (lambda f: edit_config(f, rope_parameters={"rope_type": "llama3", "rope_theta": 1e4}),
                    "'llama3' rope scaling"),
    "a missing tensor": (lambda f: edit_weights(f, lambda t: t.pop("model.layers.1.mlp.up_proj.weight")),
                         "lack model.layers.1.mlp.up_proj.weight"),
    "an extra tensor": (lambda f: edit_weights(f, lambda t: t.update(extra=torch.zeros(3))), "hold 1 tensors"),
    "a misshapen tensor": (lambda f: edit_config(f, intermediate_size=80), r"has shape \(96, 64\) but"),
    "quantized weights": (lambda f: edit_weights(f, lambda t: t.update({"model.norm.weight": torch.zeros(64,
                                                                       dtype=torch.int8)})), "stored as I8"),
    "pytorch_model.bin only": (lambda f: (f / "model.safetensors").rename(f / "pytorch_model.bin"),
                               "never opens.*safetensors"),
    "truncated weights": (lambda f: (f / "model.safetensors").write_bytes(b"\x10\x00"), "damaged or truncated"),
    "no tokenizer.json": (lambda f: (f / "tokenizer.json").unlink(), "no tokenizer.json"),
    "a context too long": (lambda f: edit_config(f, max_position_embeddings=16), "block_size must be"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_folders_give_messages(case, folders, tmp_path, capsys):
    _, good = folders["llama"]
    folder = tmp_path / "model"
    folder.mkdir()
    for path in good.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    make_bad, message = BAD[case]
    make_bad(folder)
    with pytest.raises(ConvertError, match=message):
        load_hf_folder(folder, block_size=32)
    assert main(["hf", str(folder), "--out", str(tmp_path / "out"), "--block-size", "32"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_model_over_the_limits_is_refused_with_a_context_that_fits(folders):
    from model_core.checkpoints.load_limits import LoadLimits

    _, folder = folders["llama"]
    with pytest.raises(ConvertError, match="attention maps.*--block-size 45"):
        load_hf_folder(folder, limits=LoadLimits(max_attention_cells=2 * 4 * 45 ** 2 + 10))
