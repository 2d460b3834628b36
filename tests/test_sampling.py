import numpy as np
import pytest
import torch

from model_core.model.kv_cache import window_start
from model_core.model.sampling import (
    RowFilter,
    RowSampler,
    SamplingError,
    SamplingSettings,
    compare,
    distinct_n,
    filter_logits,
    generate,
    repetition_rate,
)
from tests.helpers import tiny_model

LOGITS = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -3.0])


def test_greedy_is_argmax():
    probs, removed = filter_logits(LOGITS, temperature=0)
    assert probs.argmax() == 0 and probs[0] == 1 and removed.sum() == 5


def test_top_k_one_equals_greedy():
    assert torch.equal(filter_logits(LOGITS, top_k=1)[0], filter_logits(LOGITS, temperature=0)[0])


@pytest.mark.parametrize("kwargs", [dict(), dict(temperature=0.7), dict(top_k=3), dict(top_p=0.8),
                                    dict(min_p=0.2), dict(temperature=1.5, top_k=4, top_p=0.9, min_p=0.05)])
def test_filtered_distribution_is_the_tempered_softmax_renormalised_over_kept_tokens(kwargs):
    probs, removed = filter_logits(LOGITS, **kwargs)
    tempered = np.exp(LOGITS.numpy() / kwargs.get("temperature", 1.0))
    kept = np.where(removed.numpy(), 0.0, tempered)
    assert probs.numpy() == pytest.approx(kept / kept.sum(), abs=1e-6)
    assert not removed[0] and probs.sum().item() == pytest.approx(1.0)  # the best token always survives


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


MIXED = [SamplingSettings(0.0), SamplingSettings(1.0), SamplingSettings(0.7, top_k=3),
         SamplingSettings(1.5, top_p=0.6), SamplingSettings(1.0, min_p=0.3),
         SamplingSettings(1.2, top_k=4, top_p=0.9, min_p=0.05)]


def test_each_row_is_filtered_with_its_own_settings_as_if_alone():
    logits = torch.randn(len(MIXED), 6, generator=torch.Generator().manual_seed(0)) * 2
    probs, removed = RowFilter(MIXED, 6)(logits)
    for i, s in enumerate(MIXED):
        alone, alone_removed = filter_logits(logits[i], s.temperature, s.top_k, s.top_p, s.min_p)
        assert torch.equal(probs[i], alone) and torch.equal(removed[i], alone_removed)


@pytest.mark.slow
def test_each_row_draws_what_torch_multinomial_draws_with_its_own_generator():
    """The batched draw keeps torch.multinomial's random stream: a seed gives the tokens it always gave, also to
    the rows left when others stop (keep_rows)."""
    sampler, gens = RowSampler(MIXED, 6, seed=3), [torch.Generator().manual_seed(3) for _ in MIXED]
    rows = list(range(len(MIXED)))
    for step in range(40):
        if step == 25:  # the greedy row and two others stop
            rows = [1, 3, 5]
            sampler.keep_rows(rows)
        logits = torch.randn(len(rows), 6, generator=torch.Generator().manual_seed(step)) * 2
        draw = sampler(logits)
        for i, row in enumerate(rows):
            s = MIXED[row]
            probs, _ = filter_logits(logits[i], s.temperature, s.top_k, s.top_p, s.min_p)
            alone = int(torch.multinomial(probs, 1, generator=gens[row])) if s.temperature > 0 else int(probs.argmax())
            assert int(draw.tokens[i]) == alone
            assert float(draw.model_probs[i]) == float(torch.softmax(logits[i], -1)[alone])


def whole_sort_cut(probs: torch.Tensor, s: SamplingSettings) -> torch.Tensor:
    """(V,) -> (V,) bool: what top-k and top-p cut when the whole row is sorted (the reference for RowFilter)."""
    sorted_p, order = probs.sort(descending=True)
    removed = torch.zeros_like(probs, dtype=torch.bool)
    if s.top_k:
        removed |= probs < sorted_p[min(s.top_k, len(probs)) - 1]
    if s.top_p < 1.0:
        cut = sorted_p.cumsum(0) - sorted_p > s.top_p  # mass of the strictly better tokens past top_p
        cut[0] = False
        removed[order[cut]] = True
    return removed


RANKED = [SamplingSettings(1.0, top_k=k, top_p=p) for k in (None, 1, 50, 1024, 1025, 5000)
          for p in (1.0, 0.0, 0.3, 0.9, 0.99) if k or p < 1.0]


SCALES = (12.0, 4.0, 2.0, 0.5, 0.05)  # logits' spread: peaked to nearly flat distributions
VOCAB = 8 * 1024  # eight times the tokens below_top ranks first


def spread_probs(scale: float) -> torch.Tensor:
    """(len(RANKED), VOCAB) random distributions whose logits spread by `scale`."""
    g = torch.Generator().manual_seed(int(scale * 100))
    return torch.softmax(torch.randn(len(RANKED), VOCAB, generator=g) * scale, -1)


@pytest.mark.parametrize("scale", SCALES)
def test_ranking_the_likeliest_tokens_cuts_what_sorting_the_whole_vocabulary_cuts(scale):
    """below_top ranks a row's 1,024 likeliest tokens and sorts the whole row only when they do not decide its
    cut: every row, decided either way, loses exactly the tokens a whole sort would cut."""
    probs = spread_probs(scale)
    removed = RowFilter(RANKED, VOCAB).below_top(probs, list(range(len(RANKED))))
    for i, s in enumerate(RANKED):
        assert torch.equal(removed[i], whole_sort_cut(probs[i], s)), s


def test_those_distributions_take_both_ways():
    """Some rows' 1,024 likeliest tokens hold less than top_p 0.3 (the whole sort decides), some more than 0.99."""
    masses = torch.cat([spread_probs(scale).topk(1024, -1).values.sum(-1) for scale in SCALES])
    assert masses.min() < 0.3 and masses.max() > 0.99


def test_a_flat_row_of_ties_cuts_as_many_tokens_as_sorting_it():
    """All tokens tie: which ones a cut keeps is arbitrary (sorting breaks ties either way), how many is not."""
    probs = torch.full((len(RANKED), VOCAB), 1 / VOCAB)
    removed = RowFilter(RANKED, VOCAB).below_top(probs, list(range(len(RANKED))))
    for i, s in enumerate(RANKED):
        assert int(removed[i].sum()) == int(whole_sort_cut(probs[i], s).sum()), s


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


@pytest.mark.slow
def test_generation_is_seeded_and_cropped_to_block_size():
    model = tiny_model()
    run = lambda seed: [s.token for s in generate(model, [1, 2, 3], 20, seed=seed)]  # noqa: E731
    assert run(5) == run(5)
    assert run(5) != run(6)
    assert len(run(5)) == 20  # 23 tokens > block_size 8: the window keeps it going


def test_generation_steps_report_probabilities_and_running_logprob():
    model = tiny_model()
    steps = list(generate(model, [1], 6, temperature=0.8, top_k=4, seed=0))
    total = 0.0
    for s in steps:
        assert s.probs.sum() == pytest.approx(1.0, abs=1e-5) and s.removed.sum() == 11 - 4
        assert s.prob == pytest.approx(s.probs[s.token])
        total += np.log(s.model_prob)
        assert s.logprob == pytest.approx(total, abs=1e-5)


@pytest.mark.slow
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


def window_logits(model, prompt_len: int, ids: list[int]) -> torch.Tensor:
    """forward() on the window of ids that generation reads (window_start's half-window rule) -> (V,) logits
    of the next token."""
    start = window_start(prompt_len, len(ids), model.cfg.block_size)
    return model(torch.tensor([ids[start:]]))[0][0, -1]


def model_logprobs(model, prompt: list[int], generated: list[int]) -> list[float]:
    """log p(token | its window of the tokens before it) under the model, recomputed one position at a time."""
    ids, out = list(prompt), []
    with torch.no_grad():
        for token in generated:
            logits = window_logits(model, len(prompt), ids)
            out.append(float(torch.log_softmax(logits, -1)[token]))
            ids.append(token)
    return out


@pytest.mark.slow
def test_compare_uses_the_same_seed_for_every_setting():
    model = tiny_model()
    s = SamplingSettings(temperature=1.0)
    a, b, other_seed = (*compare(model, [1, 2], [s, s], 12, seed=3), *compare(model, [1, 2], [s], 12, seed=4))
    assert a.tokens == b.tokens and len(a.tokens) == 12 and other_seed.tokens != a.tokens


@pytest.mark.slow
@pytest.mark.parametrize("setting", [SamplingSettings(temperature=0), SamplingSettings(temperature=1.0),
                                     SamplingSettings(temperature=1.5, top_k=3, top_p=0.9)])
def test_compare_metrics_are_recomputed_from_the_model(setting):
    """Mean log-prob is the mean of log softmax(model logits) at the generated tokens (12 tokens after a
    2-token prompt: the window jumps past block_size 8 on the way)."""
    model, prompt = tiny_model(), [1, 2]
    (result,) = compare(model, prompt, [setting], 12, seed=3)
    logprobs = model_logprobs(model, prompt, result.tokens)
    assert result.mean_logprob == pytest.approx(np.mean(logprobs), abs=1e-5)
    assert result.distinct_2 == distinct_n(result.tokens, 2)
    assert result.repetition_rate == repetition_rate(result.tokens)
    if setting.temperature == 0:  # greedy: every token is the argmax, so its log-prob is the row maximum
        ids = prompt + result.tokens
        for i, token in enumerate(result.tokens):
            logits = window_logits(model, len(prompt), ids[:len(prompt) + i])
            assert token == int(logits.argmax())


def test_diversity_measures():
    assert distinct_n([1, 2, 1, 2, 1, 2], 2) == pytest.approx(2 / 5)
    assert distinct_n([1, 2, 3, 4], 2) == 1.0
    assert repetition_rate([1, 2, 3, 1, 2, 3]) == pytest.approx(1 / 4)
    assert repetition_rate([1, 2]) == 0.0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("row", range(1, len(MIXED)))  # the greedy row 0 draws its argmax, numbers or not
def test_probabilities_that_are_not_numbers_are_a_clear_error(bad, row):
    logits = torch.randn(len(MIXED), 6, generator=torch.Generator().manual_seed(1))
    logits[row, 2] = bad
    if bad < 0:  # one -inf logit is a token that cannot follow; a row of them is no distribution
        logits[row] = bad
    with pytest.raises(SamplingError, match="not numbers"):
        RowSampler(MIXED, 6, seed=0)(logits)


def test_a_row_that_cuts_nothing_keeps_its_tempered_softmax():
    logits = torch.randn(len(MIXED), 6, generator=torch.Generator().manual_seed(2)) * 2
    probs, removed = RowFilter(MIXED, 6)(logits)
    for i in (1, 2, 3, 4):  # row 1 cuts nothing: its softmax exactly; 2-4 cut (top-k, top-p, min-p) and renormalise
        tempered = torch.softmax(logits[i] / MIXED[i].temperature, -1)
        if i == 1:
            assert torch.equal(probs[i], tempered) and not removed[i].any()
        else:
            assert torch.allclose(probs[i][~removed[i]], tempered[~removed[i]] / tempered[~removed[i]].sum())
