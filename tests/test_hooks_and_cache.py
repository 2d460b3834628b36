import numpy as np
import pytest
import torch

from tests.helpers import tiny_model, tokens


@pytest.fixture
def model_and_cache():
    model = tiny_model()
    idx = tokens(model, T=7, batch=2)
    logits, cache = model.run_with_cache(idx)
    return model, idx, logits, cache


def test_cache_shapes(model_and_cache):
    model, idx, _, cache = model_and_cache
    B, T, H, dh, M = 2, 7, 2, 4, 32
    assert cache["hook_embed"].shape == (B, T, 8)
    assert cache["hook_pos_embed"].shape == (B, T, 8)
    for name in ("q", "k", "v", "z"):
        assert cache[name, 0].shape == (B, T, H, dh)
    for name in ("attn_scores_unmasked", "attn_scores", "pattern"):
        assert cache[name, 1].shape == (B, H, T, T)
    assert cache["pre", 0].shape == cache["post", 1].shape == (B, T, M)
    assert cache.stack("resid_post").shape == (2, B, T, 8)
    assert set(cache.keys()) == set(model.hook_names)


def test_pattern_rows_sum_to_one_with_causal_zeros(model_and_cache):
    _, _, _, cache = model_and_cache
    pattern = cache.stack("pattern")  # [L, B, H, T, T]
    assert torch.allclose(pattern.sum(-1), torch.ones(pattern.shape[:-1]), atol=1e-6)
    above = torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1)
    assert (pattern[..., above] == 0).all()
    scores = cache["attn_scores", 0]
    assert torch.isinf(scores[..., above]).all() and torch.isfinite(cache["attn_scores_unmasked", 0]).all()


def test_pattern_is_softmax_of_scaled_qk(model_and_cache):
    _, _, _, cache = model_and_cache
    q, k = cache["q", 0].transpose(1, 2), cache["k", 0].transpose(1, 2)  # (B, H, T, dh)
    assert torch.allclose(cache["attn_scores_unmasked", 0], q @ k.transpose(-1, -2) / 2.0, atol=1e-6)


def test_residual_additivity_pre_norm(model_and_cache):
    _, _, _, cache = model_and_cache
    for L in range(2):
        assert torch.allclose(cache["resid_mid", L], cache["resid_pre", L] + cache["attn_out", L], atol=1e-6)
        assert torch.allclose(cache["resid_post", L], cache["resid_mid", L] + cache["mlp_out", L], atol=1e-6)
    assert torch.allclose(cache["resid_pre", 1], cache["resid_post", 0])
    assert torch.allclose(cache["resid_pre", 0], cache["hook_embed"] + cache["hook_pos_embed"])


def test_cached_and_plain_logits_equal(model_and_cache):
    model, idx, logits, _ = model_and_cache
    assert torch.allclose(logits, model(idx)[0], atol=1e-6)


def test_cache_is_detached_cpu_and_numpy(model_and_cache):
    _, _, _, cache = model_and_cache
    assert all(not t.requires_grad and t.device.type == "cpu" for _, t in cache.items())
    arrays = cache.to_numpy()
    assert set(arrays) == {name for name, _ in cache.items()}
    for name, tensor in cache.items():
        assert isinstance(arrays[name], np.ndarray) and np.array_equal(arrays[name], tensor.numpy()), name


def test_names_filter_returns_only_what_was_asked():
    model = tiny_model()
    idx = tokens(model)
    _, one = model.run_with_cache(idx, names_filter="blocks.1.attn.hook_pattern")
    assert list(one.keys()) == ["blocks.1.attn.hook_pattern"]
    _, listed = model.run_with_cache(idx, names_filter=["hook_embed", "blocks.0.hook_resid_post"])
    assert list(listed.keys()) == ["hook_embed", "blocks.0.hook_resid_post"]
    _, pred = model.run_with_cache(idx, names_filter=lambda n: n.endswith("hook_z"))
    assert list(pred.keys()) == ["blocks.0.attn.hook_z", "blocks.1.attn.hook_z"]


def test_unknown_cache_key_is_a_clear_error(model_and_cache):
    with pytest.raises(KeyError, match="not in the cache"):
        model_and_cache[3]["blocks.9.hook_resid_pre"]


def test_ablating_one_head_changes_logits():
    model = tiny_model()
    idx = tokens(model)

    def zero_head_0(z, hook):
        z = z.clone()
        z[:, :, 0] = 0
        return z

    plain, _ = model(idx)
    ablated, _ = model.run_with_hooks(idx, fwd_hooks=[("blocks.0.attn.hook_z", zero_head_0)])
    assert not torch.allclose(plain, ablated)
    assert torch.allclose(model(idx)[0], plain)  # the hook is gone afterwards


def test_hooks_removed_after_an_exception():
    model = tiny_model()

    def boom(x, hook):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        model.run_with_hooks(tokens(model), fwd_hooks=[("blocks.1.hook_resid_mid", boom)])
    assert not any(h.has_hooks() for h in model.hook_dict.values())


def test_unknown_hook_name_is_rejected_without_leaving_hooks():
    model = tiny_model()
    with pytest.raises(KeyError, match="no hook point named"):
        model.run_with_hooks(tokens(model), fwd_hooks=[("hook_embed", lambda x, h: x), ("blocks.7.nope", None)])
    assert not model.hook_dict["hook_embed"].has_hooks()
