"""Activation patching: the batched sweeps equal patching one activation in a plain run; patching everything
restores the clean answer (1) and patching nothing that differs restores none of it (0)."""
import numpy as np
import pytest
import torch

from model_core.analysis.patching import PatchingError, patching_sweep
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT

pytestmark = pytest.mark.slow

ARCHS = {
    "gpt2": dict(),
    "llama-gqa": dict(norm="rmsnorm", positional="rope", n_kv_heads=2, bias=False, activation="swiglu"),
    "neox-parallel": dict(parallel_blocks=True, positional="rope", rotary_dims=4),
}
T, CHANGED = 24, 15  # the corrupted prompt differs from the clean one at one position


def random_model(**arch) -> GPT:
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50, block_size=32, d_model=32, n_heads=4, n_layers=3, **arch)).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    return model


def prompts():
    clean = torch.randint(0, 50, (T,), generator=torch.Generator().manual_seed(3)).tolist()
    corrupted = list(clean)
    corrupted[CHANGED] = (clean[CHANGED] + 1) % 50
    return clean, corrupted


def plain_restored(model, result, hook_name, patch):
    """The normalised logit difference of one corrupted run with one hook copying from the clean run."""
    clean, corrupted = prompts()
    _, cache = model.run_with_cache(torch.tensor([clean]))
    with torch.no_grad():
        logits = model.run_with_hooks(torch.tensor([corrupted]),
                                      fwd_hooks=[(hook_name, lambda act, hook: patch(act.clone(), cache[hook_name]))])[0]
    diff = float(logits[0, -1, result.target] - logits[0, -1, result.baseline])
    return (diff - result.corrupted_diff) / (result.clean_diff - result.corrupted_diff)


@pytest.mark.parametrize("arch", ARCHS.values(), ids=ARCHS.keys())
def test_the_residual_sweep_restores_one_where_the_prompts_differ_and_zero_before(arch):
    model = random_model(**arch)
    result = patching_sweep(model, *prompts(), kind="resid_pre")
    assert result.restored.shape == (3, T)
    assert result.restored[0, CHANGED] == pytest.approx(1.0, abs=1e-9)  # the inputs become identical
    # positions before the change see identical streams in both runs: nothing to restore
    assert np.allclose(result.restored[:, :CHANGED], 0.0, atol=1e-9)
    # the whole stream entering the last layer (every position) carries everything the answer reads

    def everything(act, clean):
        return clean
    assert plain_restored(model, result, "blocks.2.hook_resid_pre", everything) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("arch", ARCHS.values(), ids=ARCHS.keys())
def test_a_heads_sweep_equals_running_with_a_hook_that_swaps_it(arch):
    model = random_model(**arch)
    heads = patching_sweep(model, *prompts(), kind="z")
    by_position = patching_sweep(model, *prompts(), kind="z_pos", layer=1)
    mlps = patching_sweep(model, *prompts(), kind="mlp_out")
    assert heads.restored.shape == (3, 4) and by_position.restored.shape == (4, T) and mlps.restored.shape == (3, T)

    def swap_head(h):
        def patch(act, clean):
            act[:, :, h] = clean[:, :, h]
            return act
        return patch

    def swap_head_at(h, p):
        def patch(act, clean):
            act[:, p, h] = clean[:, p, h]
            return act
        return patch

    def swap_at(p):
        def patch(act, clean):
            act[:, p] = clean[:, p]
            return act
        return patch

    for layer in range(3):
        for h in range(4):
            expected = plain_restored(model, heads, f"blocks.{layer}.attn.hook_z", swap_head(h))
            assert heads.restored[layer, h] == pytest.approx(expected, abs=1e-9)
    for h, p in [(0, CHANGED), (3, T - 1), (2, 3)]:
        expected = plain_restored(model, by_position, "blocks.1.attn.hook_z", swap_head_at(h, p))
        assert by_position.restored[h, p] == pytest.approx(expected, abs=1e-9)
    for layer, p in [(0, CHANGED), (2, T - 1)]:
        expected = plain_restored(model, mlps, f"blocks.{layer}.hook_mlp_out", swap_at(p))
        assert mlps.restored[layer, p] == pytest.approx(expected, abs=1e-9)


def test_bad_requests_get_sentences():
    model = random_model()
    clean, corrupted = prompts()
    with pytest.raises(PatchingError, match="same length"):
        patching_sweep(model, clean, corrupted[:-1])
    with pytest.raises(PatchingError, match="nothing to restore"):
        patching_sweep(model, clean, clean, target=1, baseline=2)
    with pytest.raises(PatchingError, match="kind must be one of"):
        patching_sweep(model, clean, corrupted, kind="everything")
    with pytest.raises(PatchingError, match="pick a layer"):
        patching_sweep(model, clean, corrupted, kind="z_pos", layer=7)
    with pytest.raises(PatchingError, match="no FFN layers"):
        patching_sweep(GPT(GPTConfig(vocab_size=50, block_size=32, d_model=32, n_heads=4, n_layers=2,
                                     attn_only=True)), clean, corrupted, kind="mlp_out")
