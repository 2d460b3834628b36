"""Models the explorer did not build (model_core.foreign, transformer_explorer.opening): a learner's classes read from
their forward pass agree with patterns and residual streams computed by hand from their weights; families the
converters know become our GPT with the object's own logits; tokenizers; one-sentence refusals."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from model_core.foreign.read_model import ReadModel
from model_core.foreign.vocab import CallableTokenizer, VocabError, as_tokenizer
from model_core.model.gpt import GPT
from tests import nanogpt_model
from tests import tutorial_models as tm
from tests.seed_models import seed002_statquest as s002
from tests.seed_models import seed003_babynames as s003b
from tests.seed_models import seed003_gpt as s003g
from transformer_explorer.opening import ShowError, opened

V = 27


def hand_pattern(q: torch.Tensor, k: torch.Tensor, d_head: int) -> torch.Tensor:
    """softmax(q k^T / sqrt(d_head)) under the causal mask: q, k [H, T, dh] -> [H, T, T]."""
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    return torch.softmax(scores.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf")), -1)


def heads(t: torch.Tensor, n: int) -> torch.Tensor:
    """[T, n*dh] -> [n, T, dh]."""
    return t.view(t.shape[0], n, -1).transpose(0, 1)


def by_blocks(x: torch.Tensor, blocks, pattern_of):
    """Patterns and streams layer by layer: pattern_of(block, stream [T, D]) -> [H, T, T] from the block's weights,
    then the block itself gives the next stream."""
    patterns, streams = [], []
    for block in blocks:
        patterns.append(pattern_of(block, x))
        x = block(x[None])[0]
        streams.append(x)
    return patterns, streams


def fused_pattern(h: torch.Tensor, weight: torch.Tensor, n_heads: int) -> torch.Tensor:
    """The pattern from a fused [3D, D] qkv weight laid out (q, k, v) x heads x d_head, on the normed stream h."""
    qkv = (h @ weight.T).view(len(h), 3, n_heads, -1)
    return hand_pattern(qkv[:, 0].transpose(0, 1), qkv[:, 1].transpose(0, 1), qkv.shape[-1])


def tiny_gpt_by_hand(m: tm.TinyGPT, ids):
    def pattern(layer, x):
        D = x.shape[-1]
        q, k, _ = F.linear(layer.norm_a(x), layer.attn.qkv.weight, layer.attn.qkv.bias).split(D, -1)
        return hand_pattern(heads(q, 3), heads(k, 3), D // 3)
    return by_blocks(m.tok(ids[0]) + m.pos.weight[: len(ids[0])], m.layers, pattern)


def lecture_by_hand(m: tm.LectureLM, ids):
    def pattern(block, x):
        h = block.ln1(x)
        return torch.stack([hand_pattern(h @ hd.query.weight.T, h @ hd.key.weight.T, hd.key.weight.shape[0])
                            for hd in block.sa.heads])
    return by_blocks(m.token_embedding_table(ids[0]) + m.position_embedding_table.weight[: len(ids[0])], m.blocks,
                     pattern)


def llamaish_by_hand(m: tm.Llamaish, ids):
    def pattern(layer, x):
        a, h = layer.attention, layer.attention_norm(x)
        k = heads(h @ a.wk.weight.T, a.n_kv).repeat_interleave(a.n_heads // a.n_kv, 0)
        return hand_pattern(heads(h @ a.wq.weight.T, a.n_heads), k, a.hd)
    return by_blocks(m.tok_embeddings(ids[0]), m.layers, pattern)


def seed_gpt_by_hand(m: s003g.GPT, ids):
    return by_blocks(m.embeddings(ids)[0], m.blocks,
                     lambda b, x: fused_pattern(b.norm1(x), b.mha.qkv_proj.weight, b.mha.n_heads))


def baby_names_by_hand(m: s003b.BabyNamesModel, ids):
    return by_blocks(m.token_embeddings(ids[0]) + m.pos_embeddings.weight[: len(ids[0])], list(m.decoder_block)[:-1],
                     lambda b, x: fused_pattern(b.ln1(x), b.mha.W_qkv_proj.weight, b.mha.n_heads))


def statquest_by_hand(m: s002.DecoderOnlyTransformer, ids):
    x = m.pe(m.we(ids[0]))
    a = m.attention
    pattern = hand_pattern((x @ a.W_q.weight.T)[None], (x @ a.W_k.weight.T)[None], x.shape[-1])
    return [pattern], [x + a(x, x, x, mask=torch.tril(torch.ones(len(x), len(x))) == 0)]


CASES = {  # name -> (build, by hand, its vocabulary size, prompt length)
    "per-head modules": (lambda: tm.LectureLM(V), lecture_by_hand, V, 12),
    "fused qkv, explicit softmax": (lambda: tm.TinyGPT(V), tiny_gpt_by_hand, V, 12),
    "sdpa, grouped keys, RMSNorm": (lambda: tm.Llamaish(V), llamaish_by_hand, V, 12),
    "seed 003 GPT": (lambda: s003g.GPT(vocab_size=V, d_model=32, n_heads=4, n_layers=2), seed_gpt_by_hand, V, 12),
    "seed 003 BabyNamesModel": (lambda: s003b.BabyNamesModel(d_model=16, n_heads=4), baby_names_by_hand, V, 8),
    "seed 002 StatQuest": (lambda: s002.DecoderOnlyTransformer(5, 2, 6), statquest_by_hand, 5, 5),
}


def trained_case(name: str, seed: int = 0):
    build, by_hand, vocab, T = CASES[name]
    torch.manual_seed(seed)
    model = build()
    if not isinstance(model, s002.DecoderOnlyTransformer):  # seed 002 reads one sequence, not a batch
        model = tm.trained(model, torch.randint(0, vocab, (4, T + 1)))
    return model.eval(), by_hand, vocab, T


def atol(t: torch.Tensor) -> float:
    """float32 sums differ in the last bits between CPUs: a tolerance that scales with the values."""
    return 1e-5 * max(1.0, float(t.abs().max()))


@pytest.mark.parametrize("name", list(CASES))
def test_a_learners_model_is_read_as_computed_by_hand(name):
    model, by_hand, vocab, T = trained_case(name)
    read = ReadModel.of(model, vocab)
    ids = torch.randint(0, vocab, (1, T), generator=torch.Generator().manual_seed(1))
    logits, cache = read.run_with_cache(ids)
    with torch.no_grad():
        patterns, streams = by_hand(model, ids)
        own = model(ids[0] if read.layout.unbatched else ids)
    own = own[0] if isinstance(own, tuple) else own
    assert read.cfg.n_layers == len(patterns) and read.cfg.n_heads == patterns[0].shape[0]
    for L, (pattern, stream) in enumerate(zip(patterns, streams)):
        got = cache["pattern", L][0]
        torch.testing.assert_close(got, pattern, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(got.sum(-1), torch.ones(got.shape[:-1]), atol=1e-5, rtol=0)
        assert float(got.triu(1).abs().max()) == 0.0
        torch.testing.assert_close(cache["resid_post", L][0], stream, atol=atol(stream), rtol=1e-4)
    torch.testing.assert_close(logits.reshape(own.shape), own, atol=atol(own), rtol=1e-4)


@pytest.mark.parametrize("name", ["per-head modules", "fused qkv, explicit softmax", "seed 003 GPT"])
def test_updates_and_the_logit_lens_add_up(name):
    model, _, vocab, T = trained_case(name)
    read = ReadModel.of(model, vocab)
    logits, cache = read.run_with_cache(torch.randint(0, vocab, (1, T)))
    last = read.cfg.n_layers - 1
    for L in range(read.cfg.n_layers):
        total = cache["resid_pre", L] + cache["attn_out", L] + cache["mlp_out", L]
        torch.testing.assert_close(total, cache["resid_post", L], atol=atol(total), rtol=1e-4)
    lensed = read.unembed(read.ln_final.norm(cache["resid_post", last][0]))
    torch.testing.assert_close(lensed, logits[0], atol=atol(logits), rtol=1e-4)


def test_a_model_opened_again_after_training_shows_the_new_weights_and_the_first_keeps_its_own():
    model, _, vocab, T = trained_case("fused qkv, explicit softmax")
    ids, names = torch.randint(0, vocab, (1, T)), [chr(97 + i) for i in range(vocab)]
    first = opened(model, names).model
    before = first.run_with_cache(ids)[1]["pattern", 0]
    tm.trained(model.train(), torch.randint(0, vocab, (4, T + 1)), steps=3, lr=0.05)
    after = opened(model, names).model.run_with_cache(ids)[1]["pattern", 0]
    assert not torch.allclose(before, after)
    assert torch.equal(first.run_with_cache(ids)[1]["pattern", 0], before)


def test_the_nanogpt_object_converts_exactly():
    torch.manual_seed(0)
    model = nanogpt_model.GPT(nanogpt_model.GPTConfig()).eval()
    ckpt = opened(model, [chr(48 + i) for i in range(40)])
    assert isinstance(ckpt.model, GPT)
    ids = torch.randint(0, 40, (1, 20))
    with torch.no_grad():
        full, _ = model(ids, targets=ids)
        torch.testing.assert_close(ckpt.model(ids)[0], full, atol=atol(full), rtol=1e-4)


def test_a_hugging_face_gpt2_from_a_config_converts_exactly():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=50, n_positions=32, n_embd=32, n_layer=2, n_head=4)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ckpt = opened(model, hf_tokenizer(transformers))
    ids = torch.randint(0, 50, (1, 16))
    with torch.no_grad():
        own = model(ids).logits
        torch.testing.assert_close(ckpt.model(ids)[0], own, atol=atol(own), rtol=1e-4)
    assert ckpt.tokenizer.decode(ckpt.tokenizer.encode("a cab")) == "a cab"


def hf_tokenizer(transformers):
    """A Hugging Face fast tokenizer built offline: byte-level BPE trained on a line of text (under 50 tokens)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    tok.train_from_iterator(["a cab abc bac"], trainers.BpeTrainer(vocab_size=40, show_progress=False,
                                                                   initial_alphabet=list("abc Ġ")))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok)


def test_a_transformer_lens_bridge_is_read_as_transformer_lens_reads_it(tmp_path, monkeypatch):
    """TransformerLens 4 has no HookedTransformer: its TransformerBridge, built offline on a GPT-2 from a config, is
    read from its forward pass, and gives TransformerLens's own patterns, streams and logits."""
    transformers = pytest.importorskip("transformers")
    bridge = pytest.importorskip("transformer_lens.model_bridge")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=50, n_positions=32, n_embd=32, n_layer=2, n_head=4)
    cfg.save_pretrained(tmp_path)  # the bridge reads the config from a folder, never the network
    tok = hf_tokenizer(transformers)
    wrapped = bridge.TransformerBridge.boot_transformers(str(tmp_path), hf_model=transformers.GPT2LMHeadModel(cfg),
                                                         tokenizer=tok).eval()
    read = opened(wrapped, tok).model
    ids = torch.randint(0, 50, (1, 12))
    with torch.no_grad():
        own, theirs = wrapped.run_with_cache(ids)
    logits, cache = read.run_with_cache(ids)
    torch.testing.assert_close(logits, own, atol=atol(own), rtol=1e-4)
    for L in range(2):
        torch.testing.assert_close(cache["pattern", L], theirs[f"blocks.{L}.attn.hook_pattern"], atol=1e-5, rtol=1e-4)
        stream = theirs[f"blocks.{L}.hook_resid_post"]
        torch.testing.assert_close(cache["resid_post", L], stream, atol=atol(stream), rtol=1e-4)


@pytest.mark.parametrize("given, text", [
    ({"a": 0, "b": 1, "c": 2}, "cab"),
    ({0: "a", 1: "b", 2: "c"}, "cab"),
    (["a", "b", "c"], "cab"),
    ("abc", "cab"),
    ({"what": 0, "is": 1, "<EOS>": 2}, "what is <EOS>"),
])
def test_vocabularies_as_tutorials_keep_them(given, text):
    tok = as_tokenizer(given, 3)
    assert tok.decode(tok.encode(text)) == text


def test_encode_and_decode_functions_are_a_tokenizer():
    stoi = {c: i for i, c in enumerate("abc")}
    tok = as_tokenizer((lambda s: [stoi[c] for c in s], lambda ids: "".join("abc"[i] for i in ids)), 3)
    assert isinstance(tok, CallableTokenizer) and tok.encode("cab") == [2, 0, 1] and tok.token_label(1) == "b"
    assert tok.unknown("cax") == {"x"}


@pytest.mark.parametrize("given, says", [
    (None, "No tokenizer"),
    ({"a": 0, "b": 2}, "0, 1"),
    (["a", "a"], "twice"),
    (list("abcd"), "4 tokens but the model's logits cover 3"),
    (list("ab"), "vocabulary has 2 tokens but the model's logits cover 3"),
    (3.5, "not a tokenizer"),
])
def test_a_tokenizer_that_cannot_be_used_gets_a_sentence(given, says):
    with pytest.raises(VocabError, match=says):
        as_tokenizer(given, 3)


class NoAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.out = nn.Embedding(5, 8), nn.Linear(8, 5)

    def forward(self, ids):
        return self.out(torch.relu(self.emb(ids)))


class Crashes(tm.TinyGPT):
    def forward(self, ids):
        raise RuntimeError("shape mismatch in my code")


@pytest.mark.parametrize("model, says", [
    (NoAttention(), "found no attention in NoAttention's forward pass"),
    (Crashes(5), "Crashes's forward failed on a prompt of 8 tokens .*RuntimeError: shape mismatch in my code"),
    ("gpt", "opens a PyTorch model"),
    (tm.TinyGPT(3), "the tokenizer has 5 tokens but TinyGPT's token embedding has 3 rows"),
])
def test_a_model_that_cannot_be_read_gets_a_sentence(model, says):
    with pytest.raises(ShowError, match=says):
        opened(model, list("abcde"))
