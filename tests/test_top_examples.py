"""Examples from the whole text: one pass finds what a brute-force search over the split finds."""
import numpy as np
import pytest
import torch

from model_core.analysis.top_examples import top_examples
from tests.helpers import tiny_model

N_TOKENS = 101  # not a multiple of the block size: the last window overlaps the one before it


def split_ids(vocab: int) -> torch.Tensor:
    return torch.randint(0, vocab, (N_TOKENS,), generator=torch.Generator().manual_seed(3))


def brute_force(model, ids: torch.Tensor, min_context: int):
    """Every position's activations and every (query, key) weight, window by window, each position once."""
    T = model.cfg.block_size
    starts = list(range(0, len(ids) - T + 1, T)) + [len(ids) - T]
    posts, fires, cells = {}, {}, []
    for start in starts:
        _, cache = model.run_with_cache(ids[start: start + T][None])
        for t in range(T):
            pos = start + t
            if pos in posts:
                continue
            posts[pos] = np.stack([cache["post", L][0, t].numpy() for L in range(model.cfg.n_layers)])  # [L, M]
            fires[pos] = np.stack([cache["pre", L][0, t].numpy() > 0 for L in range(model.cfg.n_layers)])
            if t >= min_context:
                for key in range(1, t + 1):
                    weights = np.stack([cache["pattern", L][0, :, t, key].numpy() for L in range(model.cfg.n_layers)])
                    cells.append((pos, start + key, weights))  # weights [L, H]
    return posts, fires, cells


@pytest.mark.slow
def test_the_best_activation_equals_a_brute_force_maximum_over_the_split():
    model = tiny_model()
    ids = split_ids(model.cfg.vocab_size)
    result = top_examples(model, ids, k=3, min_context=2)
    posts, fires, cells = brute_force(model, ids, min_context=2)
    assert len(posts) == N_TOKENS == result.n_tokens
    every = np.stack([posts[p] for p in range(N_TOKENS)])  # [N, L, M]
    assert np.allclose(result.neuron_values[..., 0], every.max(0), atol=1e-5)
    top3 = -np.sort(-every, axis=0)[:3].transpose(1, 2, 0)  # [L, M, 3]
    assert np.allclose(result.neuron_values, top3, atol=1e-5)
    picked = np.take_along_axis(every.transpose(1, 2, 0), result.neuron_positions, axis=-1)
    assert np.allclose(picked, result.neuron_values, atol=1e-5)  # each position holds the value reported
    fired = np.stack([fires[p] for p in range(N_TOKENS)]).sum(0)
    assert np.array_equal(result.fire_counts, fired)
    weights = np.stack([w for _, _, w in cells])  # [cells, L, H]
    assert np.allclose(result.head_values[..., 0], weights.max(0), atol=1e-5)
    lookup = {(q, k): w for q, k, w in cells}
    for L in range(model.cfg.n_layers):
        for h in range(model.cfg.n_heads):
            for q, k, v in zip(result.head_queries[L, h], result.head_keys[L, h], result.head_values[L, h]):
                assert lookup[(int(q), int(k))][L, h] == pytest.approx(float(v), abs=1e-5)


def test_progress_is_reported_and_ends_at_one():
    model = tiny_model()
    seen = []
    top_examples(model, split_ids(model.cfg.vocab_size), progress=seen.append)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)


def test_an_attention_only_model_has_head_examples_but_no_neurons():
    model = tiny_model(attn_only=True)
    result = top_examples(model, split_ids(model.cfg.vocab_size), k=2)
    assert result.neuron_values is None and result.firing_rate is None
    assert result.head_values.shape == (2, 2, 2)


def test_a_text_too_short_is_refused():
    with pytest.raises(ValueError, match="at least 2 are needed"):
        top_examples(tiny_model(), torch.tensor([1]))
