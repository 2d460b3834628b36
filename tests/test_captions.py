"""Captions: the numbers and words in each sentence come from the data."""
import numpy as np
import pytest

from explorer import captions as C

TOKENS = list("abcdef")
T = len(TOKENS)


def previous_token_pattern(n: int) -> np.ndarray:
    p = np.eye(n, k=-1)
    p[0, 0] = 1  # query 0 can only see itself
    return p


def sink_pattern(n: int) -> np.ndarray:
    p = np.zeros((n, n))
    p[:, 0] = 1
    return p


def uniform_causal_pattern(n: int) -> np.ndarray:
    p = np.tril(np.ones((n, n)))
    return p / p.sum(1, keepdims=True)


def test_attention_head_caption_names_the_habit_and_its_share():
    text = C.attention_head_caption(previous_token_pattern(T), TOKENS, 1, 2)
    assert "L1·H2" in text and "100%" in text and "previous" in text
    assert "itself" in C.attention_head_caption(np.eye(T), TOKENS, 0, 0)
    assert "first token" in C.attention_head_caption(sink_pattern(T), TOKENS, 0, 0)
    mixed = 0.75 * previous_token_pattern(T) + 0.25 * np.eye(T)
    assert "75%" in C.attention_head_caption(mixed, TOKENS, 0, 0)
    assert "spreads" in C.attention_head_caption(uniform_causal_pattern(12), list("x" * 12), 0, 0)
    assert "only one token" in C.attention_head_caption(np.ones((1, 1)), ["a"], 0, 0)


def test_attention_steps_and_query_captions():
    scores = np.zeros((4, 4))
    scores[np.triu_indices(4, 1)] = -np.inf  # 6 of 16 masked
    text = C.attention_steps_caption(scores, previous_token_pattern(4), list("abcd"))
    assert "38%" in text and "100% on 0:a" in text
    text = C.query_attention_caption(previous_token_pattern(T), TOKENS, 3)
    assert text == "3:d can see keys 0:a to 3:d and puts the most attention, 100%, on 2:c."


def test_grid_caption_finds_previous_token_and_sink_heads():
    prev, first, entropy = np.full((2, 3), 0.1), np.full((2, 3), 0.1), np.ones((2, 3))
    prev[1, 2], first[0, 0] = 0.81, 0.7
    text = C.grid_caption({"prev_token": prev, "first_token": first, "entropy": entropy})
    assert text.startswith("The strongest previous-token head is L1·H2 (81%)")
    assert "L0·H0 mostly attends to the first token" in text and "70%" in text
    first[0, 0], entropy[1, 0] = 0.2, 3.2
    assert "L1·H0 spreads its attention most widely (3.2 bits)" in C.grid_caption(
        {"prev_token": prev, "first_token": first, "entropy": entropy})


def test_residual_captions():
    pre = np.array([[1.2, 1.2], [3.0, 3.0], [5.0, 5.0], [7.0, 7.0]])
    post = pre + np.array([[1.8], [2.0], [2.0], [0.9]])
    attn = 0.14 * pre
    assert C.residual_caption(pre, post, attn) == ("The residual stream grows from 1.2 to 7.9 across 4 layers; "
                                                   "attention updates are 14% of its size.")
    text = C.update_norms_caption(np.ones((3, 2)), np.array([[2, 2], [0.5, 0.5], [3, 3]]))
    assert "2 of 3 layers" in text and "FFN in layer 2" in text
    text = C.update_vs_residual_caption(np.array([1, 1, 3.0]), np.array([4, 4, 4.0]), list("abc"), 1)
    assert "42%" in text and "2:c the most (75%)" in text
    assert "0.50×" in C.variance_caption(np.full(3, 2.0), np.full(3, 1.0), 0)
    stream = np.ones((3, 2, 4))
    stream[-1] *= 3
    stream[-1, 1] *= 2
    assert "changes 4.5×" in C.residual_heatmap_caption(stream, list("ab"))
    assert "1:b has the largest vector (norm 12.0)" in C.residual_heatmap_caption(stream, list("ab"))


def test_logit_lens_caption_reports_where_the_prediction_settles():
    labels = np.array([["a", "x", "c"], ["x", "x", "d"], ["x", "y", "d"]])  # final row = final prediction
    text = C.logit_lens_caption(labels, np.full((3, 3), 0.5))
    assert "after L0" in text and "0 of 3 positions" in text and "50%" in text
    settled = np.array([["x", "y"], ["x", "y"]])
    assert "right after the embedding" in C.logit_lens_caption(settled, np.ones((2, 2)))


def test_embedding_captions():
    assert C.embedding_caption([0.2, 0.11]) == "The first two components explain 31% of the variance."
    assert "three" in C.embedding_caption([0.2, 0.1, 0.05])
    smooth = np.stack([np.cos(np.arange(16) * 0.2 + d) for d in np.linspace(0, 1, 8)], axis=1)
    assert "smooth sense of order" in C.positional_caption(smooth)
    assert "Token embeddings are 2.0×" in C.embedding_norms_caption(np.full(4, 2.0), np.ones(4))


def test_ffn_captions():
    fraction = np.array([0.0] * 12 + [0.5] * 500)
    assert "12 of 512 neurons never fire" in C.ffn_caption(fraction, 12)
    pre_h, pre_e = np.array([30, 20, 25, 25]), np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    post_h, post_e = np.array([0, 60, 40]), np.array([-0.3, -0.17, 1.0, 2.0])
    text = C.ffn_histogram_caption(pre_h, pre_e, post_h, post_e, "GELU")
    assert "50% of FFN inputs are negative" in text and "above -0.17" in text
    assert "'a' (2 of its top 3" in C.top_tokens_caption(np.array([0, 3, 1]), np.array([3, 2, 1.0]), list("abca"))
    x = np.random.default_rng(0).normal(size=(50, 2))
    assert "1.00" in C.ffn_in_out_caption(x, 2 * x)


def test_sampling_and_generation_captions():
    before = np.array([0.48, 0.2, 0.12, 0.1, 0.1])
    removed = np.array([False, False, True, True, True])
    after = np.where(removed, 0, before) / before[~removed].sum()
    text = C.sampling_caption(before, after, removed, ["␣", "e", "a", "b", "c"])
    assert text == "Filtering kept 2 of 5 tokens; the top token '␣' now has 71% (was 48%)."
    assert "No filtering" in C.sampling_caption(before, before, np.zeros(5, bool), list("abcde"))
    text = C.temperature_caption(np.array([2.0, 1.0, 0.0]), [0.5, 2], list("xyz"))
    assert "'x' gets 87%" in text and "at 2 only 51%" in text
    assert "largest logit" in C.temperature_caption(None, [0.1, 3])
    steps = [{"token_label": "a", "prob": 0.5, "logprob": -0.7}, {"token_label": "q", "prob": 0.03, "logprob": -3.5}]
    assert "'q' at step 2 (3%)" in C.generation_caption(steps)


def test_data_training_and_layernorm_captions():
    text = C.token_index_caption(np.array([1, 2, 1, 3]), list("abac"))
    assert "4 positions use 3 distinct token ids" in text and "'a' (id 1, 2 times)" in text
    text = C.loss_caption(np.arange(100), np.ones(100), [0, 99], np.array([4.17, 1.62]), np.array([4.1, 1.54]),
                          vocab_size=65)
    assert "from 4.17 to 1.62 over 99 steps" in text and "gap is 0.08" in text and "4.17." in text
    assert "from 3.00 to 1.00" in C.loss_caption(np.arange(20), np.r_[np.full(10, 3.0), np.full(10, 1.0)])
    rng = np.random.default_rng(0)
    assert "std 1.00" in C.layernorm_caption(rng.normal(3, 2, 1000), (lambda v: (v - v.mean()) / v.std())(
        rng.normal(size=1000)))


@pytest.mark.parametrize("name", [n for n in dir(C) if n.endswith("_caption")])
def test_every_caption_function_is_documented(name):
    assert getattr(C, name).__doc__, f"{name} needs a one-line docstring"
