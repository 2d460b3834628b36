"""compare() advances every setting in one batched forward pass: it must draw what generate() draws alone."""
import math

import pytest
import torch

from model_core import GPT, GPTConfig
from model_core.model.sampling import SamplingSettings, compare, generate

pytestmark = pytest.mark.slow

SETTINGS = [SamplingSettings(0.0), SamplingSettings(0.8), SamplingSettings(1.3, top_k=5),
            SamplingSettings(1.0, top_p=0.7, min_p=0.05)]


def tiny_model(block_size: int = 8) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, block_size=block_size, d_model=16, n_heads=2, n_layers=2)).eval()


def test_batched_compare_equals_one_generation_per_setting_past_the_block_size():
    model, prompt = tiny_model(), [1, 2, 3]
    results = compare(model, prompt, SETTINGS, 20, seed=5)  # 23 tokens: the window jumps past 8
    for s, r in zip(SETTINGS, results):
        steps = list(generate(model, prompt, 20, s.temperature, s.top_k, s.top_p, s.min_p, seed=5))
        assert r.tokens == [st.token for st in steps]
        assert math.isclose(r.mean_logprob, steps[-1].logprob / 20, rel_tol=1e-5)


def test_a_setting_that_reaches_the_stop_token_stops_alone():
    model = tiny_model()
    greedy = [st.token for st in generate(model, [4], 12, 0.0, seed=0)]
    stop = greedy[3]
    results = compare(model, [4], [SamplingSettings(0.0), SamplingSettings(1.5)], 12, seed=0, stop_token=stop)
    assert results[0].tokens == greedy[: greedy.index(stop) + 1]
    alone = [st.token for st in generate(model, [4], 12, 1.5, seed=0, stop_token=stop)]
    assert results[1].tokens == alone
