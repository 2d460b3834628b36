"""Heavy work is bounded before it starts (model_core.analysis.cost, explorer.callbacks.work_budget): a request
over --max-heavy-work is refused with how much to shorten, and that much fits; the lessons' own requests fit; the
importance map and the whole-text scan shrink to the limit instead of refusing. Patching warns when the prompts
barely change the answer."""
import re
from types import SimpleNamespace

import numpy as np
import pytest

from explorer.callbacks.attribution import activation_patching_view, refuse_costly_patching
from explorer.callbacks.experiments import ablation_view, importance_view
from explorer.callbacks.heads import examples_view
from explorer.callbacks.work_budget import fits, largest_fitting
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.state.session import new_session
from explorer.teaching.captions_attribution import patching_caption
from explorer.teaching.prompt_pairs import PAIRS
from model_core.analysis.cost import forward_ops, generation_ops, patching_ops
from model_core.model.config import GPTConfig

# SmolLM2-135M's shape (no weights: the costs are arithmetic on the config)
SMOLLM2 = GPTConfig(vocab_size=49152, block_size=2048, d_model=576, n_heads=9, n_kv_heads=3, n_layers=30, d_mlp=1536,
                    activation="swiglu", norm="rmsnorm", positional="rope", bias=False)
CLEAN, CORRUPTED, _ = PAIRS["shakespeare"]


def test_costs_grow_with_rows_tokens_and_model_size():
    small = GPTConfig(vocab_size=65, block_size=256, d_model=128, n_heads=4, n_layers=4)
    assert forward_ops(small, 1, 64) < forward_ops(small, 2, 64) < forward_ops(SMOLLM2, 2, 64)
    assert patching_ops(SMOLLM2, 100, 50, "resid_pre") < patching_ops(SMOLLM2, 100, 0, "resid_pre")
    assert patching_ops(SMOLLM2, 100, 0, "z") < patching_ops(SMOLLM2, 100, 0, "resid_pre")
    assert generation_ops(SMOLLM2, 10, 100) < generation_ops(SMOLLM2, 10, 200)
    # patching's ~T^2: twice the tokens (differing at the start) is about four times the work
    ratio = patching_ops(SMOLLM2, 200, 0, "resid_pre") / patching_ops(SMOLLM2, 100, 0, "resid_pre")
    assert 3.5 < ratio < 4.5


def test_a_long_smollm2_patching_is_refused_with_a_length_that_fits():
    session = SimpleNamespace(inspected=SimpleNamespace(config=SMOLLM2))
    clean = list(range(1000, 1200))
    corrupted = [7, *clean[1:]]  # differs at the first token: every position is patched
    with pytest.raises(UserError) as refused:
        refuse_costly_patching(session, clean, corrupted, "resid_pre", 0)
    message = str(refused.value)
    assert "30 layers × 200 positions = 6,000 copies" in message and "billion operations" in message
    longest = int(re.search(r"at most (\d+) tokens", message).group(1))
    assert fits(patching_ops(SMOLLM2, longest, 0, "resid_pre"))
    assert not fits(patching_ops(SMOLLM2, longest + 1, 0, "resid_pre"))
    refuse_costly_patching(session, clean[:longest], corrupted[:longest], "resid_pre", 0)  # that much runs


@pytest.mark.slow
def test_the_lessons_patching_pairs_fit():
    smollm2 = SimpleNamespace(inspected=SimpleNamespace(config=SMOLLM2))
    for sweep in ("resid_pre", "z"):  # SmolLM2's pair: ~10 tokens, differing at the subject (position 1)
        assert fits(patching_ops(SMOLLM2, 10, 1, sweep))
        refuse_costly_patching(smollm2, list(range(10)), [0, 99, *range(2, 10)], sweep, 0)
    shipped = new_session("shakespeare")
    cfg, positions = shipped.inspected.config, len(shipped.inspected.tokenizer.encode(CLEAN))
    for kind, shape in zip(PATCH_KINDS_SHOWN, ((cfg.n_layers, positions), (cfg.n_layers, cfg.n_heads))):
        figure, caption = activation_patching_view(shipped, CLEAN, CORRUPTED, kind, 1)
        assert np.shape(figure.data[0].z) == shape  # every patch ran: one cell each
        assert caption.startswith("The clean prompt prefers e over s by +")  # and the pair moves the answer


PATCH_KINDS_SHOWN = ("residual stream (layer × position)", "each head, all positions (layer × head)")


@pytest.mark.slow
def test_the_callbacks_refuse_over_the_limit_before_any_work(monkeypatch):
    session = new_session("shakespeare")
    monkeypatch.setattr(LIMITS, "max_heavy_gops", 0.5)
    with pytest.raises(UserError, match="shorten both prompts to at most"):
        activation_patching_view(session, CLEAN, CORRUPTED, PATCH_KINDS_SHOWN[0], 0)
    monkeypatch.setattr(LIMITS, "max_heavy_gops", 0.001)
    with pytest.raises(UserError, match="does not fit at any length"):
        activation_patching_view(session, CLEAN, CORRUPTED, PATCH_KINDS_SHOWN[0], 0)
    with pytest.raises(UserError, match="new tokens|Shorten the prompt"):
        ablation_view(session, "ROMEO:", "0.0", "", "", "", "mean", -1, 0.8, 300, 0)


@pytest.mark.slow
def test_the_importance_map_and_the_examples_shrink_to_the_limit_instead(monkeypatch):
    session = new_session("shakespeare")
    monkeypatch.setattr(LIMITS, "max_heavy_gops", 0.05)
    _, caption = importance_view(session, "mean")
    assert "estimat" in caption  # one backward pass instead of every unit knocked out
    _, examples_note, _ = examples_view(session, "neuron", 0, 0)
    assert "Only the first" in examples_note and "longer than this server gives one request" in examples_note


def test_largest_fitting_is_the_boundary(monkeypatch):
    monkeypatch.setattr(LIMITS, "max_heavy_gops", 1.0)
    cost = lambda n: n * 1e7  # noqa: E731
    assert largest_fitting(cost, 10_000) == 100 and largest_fitting(lambda n: 1e12, 10) == 0


def test_patching_warns_when_the_prompts_barely_change_the_answer():
    quiet = patching_caption("x", "layer 0, position 3", 0.7, 5.2, -1.3, "a", "b")
    noisy = patching_caption("x", "layer 0, position 3", 0.7, 5.2, 5.2003, "a", "b")
    assert not quiet.startswith("**Careful") and noisy.startswith("**Careful")
    assert "0.0003 logits" in noisy and "noise" in noisy
