"""KV cache: GPT.extend gives forward()'s logits for every architecture, and cached generation draws the same
tokens as the uncached reference (use_cache=False), past block_size too, where both read the window that
window_start names (the half-window rule); ablated generation runs its hooks on that window every step."""
import math

import pytest
import torch

from model_core.analysis.ablation import Ablation, ablated_generation, ablation_hooks
from model_core.model.gpt import GPT
from model_core.model.kv_cache import KVCache, window_start
from model_core.model.layers import CausalSelfAttention
from model_core.model.rope import Rotary
from model_core.model.sampling import SamplingSettings, compare, filter_logits, generate
from tests.helpers import extended_logits, tiny_model, tokens

# every positional scheme with both norm placements, and each other option at least once
ARCHS = [dict(positional=p, norm_placement=n)
         for p in ("learned", "sinusoidal", "rope", "none") for n in ("pre", "post")]
ARCHS += [dict(positional="rope", qk_norm=True), dict(positional="learned", qk_norm=True, norm_placement="post"),
          dict(attn_only=True), dict(positional="rope", attn_only=True, norm_placement="post"),
          dict(tie_weights=False, bias=False, norm="rmsnorm"), dict(norm="none", activation="swiglu"),
          dict(activation="relu2", positional="sinusoidal", n_layers=3)]
SETTINGS = [SamplingSettings(0.0), SamplingSettings(1.0), SamplingSettings(0.7, top_k=4),
            SamplingSettings(1.3, top_p=0.8), SamplingSettings(1.0, top_k=6, top_p=0.9, min_p=0.05)]


def arch_id(arch: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in arch.items())


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def sharp_model(seed: int = 0, **arch) -> GPT:
    """A tiny random model with weights large enough that positions and context move the logits by O(1):
    GPT's 0.02 init gives near-uniform logits, where a wrong position offset would hardly show."""
    model = tiny_model(seed, **arch)
    scale = 0.3 if model.cfg.norm == "none" else 0.6  # without norms the residual stream grows layer by layer
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * scale)
    return model


@pytest.mark.parametrize("arch", ARCHS, ids=arch_id)
def test_incremental_logits_equal_the_full_forward(arch):
    model = sharp_model(**arch)
    idx = tokens(model, T=8, batch=3)
    full, _ = model(idx)  # (B, T, V)
    assert full.std() > 0.5  # the logits are far from uniform
    for chunks in ([8], [1] * 8, [3, 1, 1, 3], [5, 2, 1]):
        torch.testing.assert_close(extended_logits(model, idx, chunks), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHS, ids=arch_id)
def test_last_only_gives_the_last_position_and_still_fills_the_cache(arch):
    model = sharp_model(**arch)
    idx = tokens(model, T=8, batch=2)
    full, _ = model(idx)
    cache = KVCache.for_model(model, 2)
    first = model.extend(idx[:, :5], cache, last_only=True)  # (B, 1, V)
    assert first.shape == (2, 1, model.cfg.vocab_size)
    torch.testing.assert_close(first[:, 0], full[:, 4], atol=1e-5, rtol=1e-5)
    rest = model.extend(idx[:, 5:], cache)  # the last block's keys and values of positions 0..4 were kept
    torch.testing.assert_close(rest, full[:, 5:], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", [dict(), dict(positional="rope", qk_norm=True, norm_placement="post")], ids=arch_id)
def test_the_explicit_attention_path_agrees_with_a_cache(arch):
    model = sharp_model(**arch)
    for m in model.modules():
        if isinstance(m, CausalSelfAttention):
            m.force_explicit = True
    idx = tokens(model, T=8, batch=2)
    torch.testing.assert_close(extended_logits(model, idx, [3, 1, 4]), model(idx)[0], atol=1e-5, rtol=1e-5)


def test_rotary_with_a_start_rotates_by_the_absolute_position():
    rotary, x = Rotary(block_size=16, dims=8), torch.randn(2, 10, 3, 8)
    torch.testing.assert_close(rotary(x[:, 6:], start=6), rotary(x)[:, 6:])


def test_a_full_cache_refuses_more_tokens_with_a_clear_error():
    model = sharp_model()
    cache = KVCache.for_model(model, 1)
    model.extend(tokens(model, T=8, batch=1), cache)
    with pytest.raises(ValueError, match="exceed block_size 8: clear the cache"):
        model.extend(tokens(model, T=1, batch=1), cache)


def test_keep_rows_drops_finished_rows():
    model = sharp_model()
    idx = tokens(model, T=6, batch=3)
    cache = KVCache.for_model(model, 3)
    model.extend(idx[:, :5], cache)
    cache.keep_rows([2, 0])
    torch.testing.assert_close(model.extend(idx[[2, 0], 5:], cache)[:, 0], model(idx)[0][[2, 0], 5],
                               atol=1e-5, rtol=1e-5)


def generated(model, prompt, n, s: SamplingSettings, use_cache: bool, seed: int = 3, stop=None):
    return list(generate(model, prompt, n, s.temperature, s.top_k, s.top_p, s.min_p, seed=seed,
                         stop_token=stop, use_cache=use_cache))


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS, ids=arch_id)
def test_cached_generation_draws_the_uncached_tokens_past_block_size(arch):
    model = sharp_model(**arch)
    prompts = ([4], [1, 2, 3, 4, 5, 6, 7], list(range(11)))  # short, nearly a block, longer than one
    for i, s in enumerate(SETTINGS):
        prompt = prompts[i % len(prompts)]
        cached, uncached = generated(model, prompt, 14, s, True), generated(model, prompt, 14, s, False)
        assert [st.token for st in cached] == [st.token for st in uncached]
        for a, b in zip(cached, uncached):
            assert a.model_prob == pytest.approx(b.model_prob, abs=1e-5)
            assert a.probs == pytest.approx(b.probs, abs=1e-5)
            assert (a.removed == b.removed).all()


def fed_sizes(monkeypatch, model, prompt, n) -> list[int]:
    """Tokens fed to GPT.extend at each step of a cached generate(); fails if it runs forward()."""
    fed, original = [], GPT.extend
    monkeypatch.setattr(GPT, "extend", lambda self, idx, cache, **kw: fed.append(idx.size(1)) or original(
        self, idx, cache, **kw))
    monkeypatch.setattr(GPT, "forward", lambda *a, **kw: pytest.fail("the cached path ran forward()"))
    list(generate(model, prompt, n, seed=0))
    return fed


def test_cached_generation_feeds_only_new_tokens_until_the_block_is_full(monkeypatch):
    # 3 prompt tokens, then one at a time up to 8 positions; the 9th token makes the window jump to the
    # newest 4 (re-encoded once), and then it grows one token at a time again
    assert fed_sizes(monkeypatch, sharp_model(), [1, 2, 3], 9) == [3, 1, 1, 1, 1, 1, 4, 1, 1]


def test_past_the_block_the_window_jumps_by_half_a_block(monkeypatch):
    model = sharp_model(block_size=16)
    fed = fed_sizes(monkeypatch, model, [i % 11 for i in range(16)], 40)
    # a full 16-token prompt, then: re-encode the newest 8, feed 8 single tokens (the window grows 9..16),
    # re-encode 8 again... one step in 9 re-encodes, 8 steps in 9 feed one token
    assert fed == [16] + ([8] + [1] * 8) * 4 + [8, 1, 1]
    assert fed.count(8) == 5 and fed.count(1) == 34


def stated_window_starts(prompt_len: int, last_n: int, block: int) -> list[int]:
    """window_start for n = prompt_len..last_n, by the rule as stated (step by step, not window_start's
    closed form): start at max(0, prompt_len - block); jump to n - block // 2 when the window would exceed block."""
    start, out = max(0, prompt_len - block), []
    for n in range(prompt_len, last_n + 1):
        if n - start > block:
            start = n - block // 2
        out.append(start)
    return out


def test_window_start_follows_the_half_window_rule():
    # block 8: the window grows to 8 tokens, jumps back to the newest 4, grows to 8 again
    assert [window_start(3, n, 8) for n in range(3, 15)] == [0] * 6 + [5] * 5 + [10]
    # a prompt longer than the block: its last 8 tokens, then the newest 4 from the next token on
    assert [window_start(11, n, 8) for n in range(11, 18)] == [3] + [8] * 5 + [13]
    assert [window_start(5, n, 1) for n in range(5, 8)] == [4, 5, 6]  # block 1: only the newest token
    for prompt_len, block in [(1, 8), (3, 8), (8, 8), (20, 8), (16, 16), (60, 64), (6, 64), (4, 7), (2, 2)]:
        assert ([window_start(prompt_len, n, block) for n in range(prompt_len, prompt_len + 200)]
                == stated_window_starts(prompt_len, prompt_len + 199, block))


def recorded_contexts(monkeypatch, model, prompt, n, **kw) -> tuple[list[list[int]], list[int]]:
    """(the token ids forward() read at each step of generate(..., **kw), the generated tokens)."""
    contexts, original = [], GPT.forward
    monkeypatch.setattr(GPT, "forward", lambda self, idx, *a, **k: contexts.append(idx[0].tolist()) or original(
        self, idx, *a, **k))
    return contexts, [st.token for st in generate(model, prompt, n, seed=0, **kw)]


def test_the_uncached_path_reads_exactly_the_window_the_rule_names(monkeypatch):
    model, prompt = sharp_model(), [1, 2, 3]
    contexts, new = recorded_contexts(monkeypatch, model, prompt, 12, use_cache=False)
    ids = prompt + new
    # block 8: 3..8 tokens, then the newest 4 after the jump at the 9th token, 4..8, then 4 again
    assert [len(c) for c in contexts] == [3, 4, 5, 6, 7, 8, 4, 5, 6, 7, 8, 4]
    assert contexts == [ids[start:n] for n, start in zip(range(3, 15), [0] * 6 + [5] * 5 + [10])]


def test_the_hooked_path_reads_the_same_window_as_the_cache():
    model, lengths = sharp_model(), []
    with model.hooks([("hook_embed", lambda x, hook: lengths.append(x.size(1)))]):  # any hook: forward() path
        hooked = [st.token for st in generate(model, [1, 2, 3], 12, seed=0)]
    assert lengths == [3, 4, 5, 6, 7, 8, 4, 5, 6, 7, 8, 4]
    assert hooked == [st.token for st in generate(model, [1, 2, 3], 12, seed=0)]


def test_seeds_still_differ_and_repeat_with_the_cache():
    model = sharp_model()
    run = lambda seed: [st.token for st in generate(model, [1, 2], 20, 1.0, seed=seed)]  # noqa: E731
    assert run(5) == run(5) and run(5) != run(6)


@pytest.mark.slow
@pytest.mark.parametrize("arch", [dict(), dict(positional="rope", norm_placement="post"), dict(positional="none")],
                         ids=arch_id)
def test_batched_compare_equals_each_setting_alone_and_the_uncached_compare(arch):
    model = sharp_model(**arch)
    cached = compare(model, [1, 2, 3], SETTINGS, 20, seed=5)
    uncached = compare(model, [1, 2, 3], SETTINGS, 20, seed=5, use_cache=False)
    for s, c, u in zip(SETTINGS, cached, uncached):
        alone = generated(model, [1, 2, 3], 20, s, use_cache=True, seed=5)
        assert c.tokens == u.tokens == [st.token for st in alone]
        assert c.mean_logprob == pytest.approx(u.mean_logprob, abs=1e-5)
        assert math.isclose(c.mean_logprob, alone[-1].logprob / 20, rel_tol=1e-5)


def test_compare_with_a_stop_token_drops_finished_rows_from_the_cache():
    model = sharp_model()
    greedy = [st.token for st in generated(model, [4], 14, SETTINGS[0], True)]
    stop = greedy[2]
    cached = compare(model, [4], SETTINGS, 14, seed=3, stop_token=stop)
    uncached = compare(model, [4], SETTINGS, 14, seed=3, stop_token=stop, use_cache=False)
    assert [c.tokens for c in cached] == [u.tokens for u in uncached]
    assert cached[0].tokens == greedy[: greedy.index(stop) + 1]
    for s, c in zip(SETTINGS, cached):
        assert c.tokens == [st.token for st in generated(model, [4], 14, s, True, stop=stop)]


def reference_ablated_tokens(model, prompt, ablation, n, s: SamplingSettings, seed: int) -> list[int]:
    """Ablated generation by hand: forward() with the hooks on the window of the rule as stated, every step."""
    gen, ids = torch.Generator().manual_seed(seed), list(prompt)
    starts = stated_window_starts(len(prompt), len(prompt) + n - 1, model.cfg.block_size)
    for start in starts:
        with torch.no_grad():
            logits, _ = model.run_with_hooks(torch.tensor([ids[start:]]), fwd_hooks=ablation_hooks([ablation], None, None))
        probs, _ = filter_logits(logits[0, -1], s.temperature, s.top_k, s.top_p, s.min_p)
        ids.append(int(torch.multinomial(probs, 1, generator=gen)) if s.temperature > 0 else int(probs.argmax()))
    return ids[len(prompt):]


@pytest.mark.parametrize("arch", [dict(), dict(positional="rope")], ids=arch_id)
def test_ablated_generation_still_runs_the_hooks_on_the_whole_window_every_step(arch):
    model = sharp_model(**arch)
    ablation, s = Ablation(heads=((0, 1),), mlp_layers=(1,)), SamplingSettings(1.0, top_k=5)
    steps = ablated_generation(model, [1, 2, 3], ablation, None, 14, s, seed=7)
    assert [st.token for st in steps] == reference_ablated_tokens(model, [1, 2, 3], ablation, 14, s, seed=7)
    clean = generated(model, [1, 2, 3], 14, s, use_cache=True, seed=7)
    assert [st.model_prob for st in steps] != [st.model_prob for st in clean]
    assert all(not hp.fns for hp in model.hook_dict.values())
