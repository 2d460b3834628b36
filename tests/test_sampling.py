import numpy as np
import pytest
import torch

from model_core.sampling import (SamplingError, SamplingSettings, compare, distinct_n, filter_logits, generate,
                                 repetition_rate)
from tests.helpers import tiny_model

LOGITS = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -3.0])


def test_greedy_is_argmax():
    probs, removed = filter_logits(LOGITS, temperature=0)
    assert probs.argmax() == 0 and probs[0] == 1 and removed.sum() == 5


def test_top_k_one_equals_greedy():
    assert torch.equal(filter_logits(LOGITS, top_k=1)[0], filter_logits(LOGITS, temperature=0)[0])


@pytest.mark.parametrize("kwargs", [dict(), dict(temperature=0.7), dict(top_k=3), dict(top_p=0.8),
                                    dict(min_p=0.2), dict(temperature=1.5, top_k=4, top_p=0.9, min_p=0.05)])
def test_filtered_distribution_sums_to_one_and_removed_are_zero(kwargs):
    probs, removed = filter_logits(LOGITS, **kwargs)
    assert probs.sum().item() == pytest.approx(1.0)
    assert (probs[removed] == 0).all() and (probs[~removed] > 0).all()


def test_top_k_is_clamped_to_the_vocabulary():
    probs, removed = filter_logits(LOGITS, top_k=1000)
    assert not removed.any()


def test_top_p_keeps_the_smallest_set_reaching_p():
    p = torch.softmax(LOGITS, -1)
    _, removed = filter_logits(LOGITS, top_p=float(p[0] + p[1] - 1e-4))
    assert removed.tolist() == [False, False, True, True, True, True]
    _, removed0 = filter_logits(LOGITS, top_p=0.0)
    assert removed0.tolist() == [False] + [True] * 5


def test_min_p_is_relative_to_the_best_token():
    p = torch.softmax(LOGITS, -1)
    _, removed = filter_logits(LOGITS, min_p=float(p[2] / p[0]) + 1e-3)
    assert removed.tolist() == [False, False, True, True, True, True]


def test_temperature_sharpens_and_flattens():
    cold, hot = filter_logits(LOGITS, temperature=0.5)[0], filter_logits(LOGITS, temperature=2.0)[0]
    assert cold[0] > torch.softmax(LOGITS, -1)[0] > hot[0]


@pytest.mark.parametrize("kwargs, message", [
    (dict(temperature=-1), "temperature must be a number ≥ 0"),
    (dict(temperature=float("nan")), "temperature must be a number ≥ 0"),
    (dict(top_k=-2), "top_k must be a whole number ≥ 0"),
    (dict(top_k=2.5), "top_k must be a whole number ≥ 0"),
    (dict(top_p=1.5), "top_p must be between 0 and 1"),
    (dict(min_p=-0.1), "min_p must be between 0 and 1"),
])
def test_out_of_range_settings_are_clear_errors(kwargs, message):
    with pytest.raises(SamplingError, match=message):
        filter_logits(LOGITS, **kwargs)


def test_generation_is_seeded_and_cropped_to_block_size():
    model = tiny_model()
    run = lambda seed: [s.token for s in generate(model, [1, 2, 3], 20, seed=seed)]  # noqa: E731
    assert run(5) == run(5)
    assert run(5) != run(6)
    assert len(run(5)) == 20  # 23 tokens > block_size 8: cropping keeps it going


def test_generation_steps_report_probabilities_and_running_logprob():
    model = tiny_model()
    steps = list(generate(model, [1], 6, temperature=0.8, top_k=4, seed=0))
    total = 0.0
    for s in steps:
        assert s.probs.sum() == pytest.approx(1.0, abs=1e-5) and s.removed.sum() == 11 - 4
        assert s.prob == pytest.approx(s.probs[s.token])
        total += np.log(s.model_prob)
        assert s.logprob == pytest.approx(total, abs=1e-5)


def test_greedy_generation_follows_the_argmax():
    model = tiny_model()
    ids = [3]
    for s in generate(model, [3], 5, temperature=0):
        assert s.token == int(model(torch.tensor([ids[-8:]]))[0][0, -1].argmax())
        ids.append(s.token)


def test_stop_token_ends_generation():
    model = tiny_model()
    first = next(generate(model, [1], 1, temperature=0)).token
    assert [s.token for s in generate(model, [1], 10, temperature=0, stop_token=first)] == [first]


def test_empty_prompt_is_rejected():
    with pytest.raises(SamplingError, match="prompt is empty"):
        next(generate(tiny_model(), [], 3))


def test_compare_uses_the_same_seed_for_every_setting():
    model = tiny_model()
    s = SamplingSettings(temperature=1.0)
    a, b, greedy = compare(model, [1, 2], [s, s, SamplingSettings(temperature=0)], 12, seed=3)
    assert a.tokens == b.tokens and len(a.tokens) == 12
    assert greedy.settings.temperature == 0 and greedy.mean_logprob <= 0


def test_diversity_measures():
    assert distinct_n([1, 2, 1, 2, 1, 2], 2) == pytest.approx(2 / 5)
    assert distinct_n([1, 2, 3, 4], 2) == 1.0
    assert repetition_rate([1, 2, 3, 1, 2, 3]) == pytest.approx(1 / 4)
    assert repetition_rate([1, 2]) == 0.0
