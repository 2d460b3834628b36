import numpy as np
import pytest
import torch

from model_core.analysis import (
    embedding_pca,
    ffn_statistics,
    head_role,
    head_statistics,
    hidden_state_pca,
    logit_lens,
    positional_pca,
    residual_statistics,
    residual_stream,
    token_embedding_pca,
    token_plus_position_pca,
    top_activating_positions,
)
from tests.helpers import tiny_model, tokens


def previous_token_pattern(T: int) -> np.ndarray:
    p = np.zeros((T, T))
    p[0, 0] = 1
    p[np.arange(1, T), np.arange(T - 1)] = 1
    return p


def sink_then_previous_pattern(T: int) -> np.ndarray:
    """70% of the mass on key 0, 30% on the previous token (for queries >= 2)."""
    p = previous_token_pattern(T) * 0.3
    p[:, 0] += 0.7
    p[1] = [1] + [0] * (T - 1)
    return p


def test_previous_token_head_statistics():
    s = head_statistics(previous_token_pattern(6)[None, None])
    assert s["prev_token"][0, 0] == pytest.approx(1.0)
    assert s["self"][0, 0] == pytest.approx(0.0)  # query 0, which can only see itself, is not counted
    assert s["entropy"][0, 0] == pytest.approx(0.0)
    assert s["mean_distance"][0, 0] == pytest.approx(5 / 6)


def test_uniform_causal_head_has_log_entropy():
    T = 5
    p = np.tril(np.ones((T, T)))
    p /= p.sum(-1, keepdims=True)
    s = head_statistics(p)
    assert s["entropy"] == pytest.approx(np.mean(np.log2(np.arange(1, T + 1))))
    assert s["first_token"] == pytest.approx(np.mean(1 / np.arange(2, T + 1)))


def test_sink_exclusion_reveals_the_real_role():
    s = head_statistics(sink_then_previous_pattern(8)[None, None])
    # queries 1..7: query 1 puts all of its attention on key 0, which is both the first and the previous
    # token; queries 2..7 put 0.7 on key 0 and 0.3 on the previous token
    assert s["first_token"][0, 0] == pytest.approx((1 + 6 * 0.7) / 7)
    assert s["prev_token"][0, 0] == pytest.approx((1 + 6 * 0.3) / 7)
    assert s["prev_token_no_sink"][0, 0] == pytest.approx(1.0)  # without key 0, queries 2..7 only look back one
    assert head_role(s, 0, 0)[0].startswith("the first token")


def test_head_statistics_on_a_real_cache_have_layer_head_shape():
    model = tiny_model()
    _, cache = model.run_with_cache(tokens(model, T=8, batch=1))
    s = head_statistics(cache.stack("pattern")[:, 0].numpy())
    assert all(v.shape == (2, 2) for v in s.values())
    assert ((s["prev_token"] >= 0) & (s["prev_token"] <= 1)).all()


def test_residual_statistics_match_the_cache():
    model = tiny_model()
    _, cache = model.run_with_cache(tokens(model, T=6, batch=1))
    r = residual_statistics(cache)
    assert r.resid_pre.shape == r.mlp_out.shape == r.attn_var.shape == (2, 6)
    assert np.allclose(r.resid_post[1], cache["resid_post", 1][0].norm(dim=-1).numpy())
    stream = residual_stream(cache)
    assert stream.shape == (3, 6, 8)
    assert np.allclose(stream[0], cache["resid_pre", 0][0].numpy())
    assert np.allclose(stream[2], cache["resid_post", 1][0].numpy())


def test_attention_only_residual_statistics_have_zero_mlp_updates():
    model = tiny_model(attn_only=True)
    _, cache = model.run_with_cache(tokens(model, T=5, batch=1))
    assert (residual_statistics(cache).mlp_out == 0).all()
    with pytest.raises(ValueError, match="attention-only"):
        ffn_statistics(cache, 0)


@pytest.mark.slow
def test_pca_finds_the_dominant_direction():
    rng = np.random.default_rng(0)
    along = rng.normal(size=50)
    x = np.outer(along, [3.0, 4.0, 0, 0]) + rng.normal(scale=0.01, size=(50, 4))
    result = embedding_pca(x, 2)
    assert result.explained_variance_ratio[0] > 0.99
    # the first coordinate is the distance along the unit direction (0.6, 0.8) from the mean, up to sign
    assert np.abs(result.coords[:, 0]) == pytest.approx(np.abs(5 * (along - along.mean())), abs=0.05)
    assert result.coords.shape == (50, 2)
    assert embedding_pca(x, 3).coords.shape == (50, 3)
    with pytest.raises(ValueError, match="at least 2 points"):
        embedding_pca(x[:1], 2)


@pytest.mark.slow
def test_model_pca_helpers_cover_the_seed_panels():
    model = tiny_model()
    ids = tokens(model, T=6, batch=1)[0].tolist()
    assert token_embedding_pca(model).coords.shape == (11, 2)
    assert positional_pca(model, 3).coords.shape == (8, 3)
    assert token_plus_position_pca(model, ids).coords.shape == (6, 2)
    _, cache = model.run_with_cache(torch.tensor([ids]))
    assert hidden_state_pca(cache, 2).coords.shape == (6, 2)


def test_ffn_statistics_count_active_and_dead_neurons():
    model = tiny_model(activation="relu")
    with torch.no_grad():
        model.blocks[0].mlp.W_in.bias[:3] = -1e4  # three neurons that can never fire
    _, cache = model.run_with_cache(tokens(model, T=8, batch=2))
    s = ffn_statistics(cache, 0, bins=20)
    assert s.pre_hist.sum() == 2 * 8 * 32 and len(s.post_edges) == 21
    assert s.dead >= 3 and (s.fraction_active[:3] == 0).all()
    assert s.layer_sparsity.shape == (2,) and 0 < s.layer_sparsity[0] < 1
    post = cache["post", 0][0].numpy()
    positions, values = top_activating_positions(post, neuron=5, k=3)
    assert values[0] == post[:, 5].max() and list(values) == sorted(values, reverse=True)


def test_logit_lens_final_row_is_the_model_prediction():
    model = tiny_model()
    idx = tokens(model, T=6, batch=1)
    logits, cache = model.run_with_cache(idx)
    lens = logit_lens(model, cache, k=3)
    assert lens.top_ids.shape == lens.top_probs.shape == (3, 6, 3)
    final = torch.softmax(logits[0], -1).topk(3)
    assert np.array_equal(lens.top_ids[-1], final.indices.numpy())
    assert np.allclose(lens.top_probs[-1], final.values.numpy(), atol=1e-6)
    assert (np.diff(lens.top_probs, axis=-1) <= 0).all()
