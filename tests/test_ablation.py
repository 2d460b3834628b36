"""Ablation engine: what a knocked-out unit changes, batched importance map, generation, bad ablations."""
import pytest
import torch

from model_core.analysis.ablation import (
    Ablation,
    AblationError,
    ablated_generation,
    ablated_logits,
    ablation_hooks,
    component_means,
    eval_windows,
    importance_map,
    mode_means,
    validation_loss,
)
from model_core.model.sampling import SamplingSettings

from .helpers import tiny_model, tokens


def windows_for(model, n=6, seed=3):
    data = torch.randint(0, model.cfg.vocab_size, (200,), generator=torch.Generator().manual_seed(seed))
    return eval_windows(data, model.cfg.block_size, n_windows=n)


def cached_with(model, idx, hooks):
    """Activations seen after the ablation hooks (run_with_cache adds its saving hooks after them)."""
    with model.hooks(hooks):
        _, cache = model.run_with_cache(idx)
    return cache


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_head_ablation_replaces_only_that_head_and_nothing_before_its_layer(mode):
    model = tiny_model(n_layers=3, n_heads=2, d_model=8)
    idx, windows = tokens(model), windows_for(model)
    means = mode_means(model, mode, windows)
    _, clean = model.run_with_cache(idx)
    ablated = cached_with(model, idx, ablation_hooks([Ablation(heads=((1, 1),))], None, means))
    z = ablated["blocks.1.attn.hook_z"]
    expected = torch.zeros(z.shape[-1]) if mode == "zero" else means["blocks.1.attn.hook_z"][1]
    assert torch.allclose(z[:, :, 1], expected.expand_as(z[:, :, 1]))
    assert torch.equal(z[:, :, 0], clean["blocks.1.attn.hook_z"][:, :, 0])  # the other head of that layer
    before = [n for n in model.hook_names if n.startswith(("hook_", "blocks.0."))] + ["blocks.1.hook_resid_pre"]
    for name in before:
        assert torch.equal(ablated[name], clean[name]), name
    assert not torch.allclose(ablated["blocks.2.hook_resid_post"], clean["blocks.2.hook_resid_post"])


def test_mean_of_a_head_is_its_average_over_windows_and_positions():
    model = tiny_model()
    windows = windows_for(model)
    _, cache = model.run_with_cache(windows[:, :-1])
    means = component_means(model, windows)
    assert torch.allclose(means["blocks.0.attn.hook_z"], cache["blocks.0.attn.hook_z"].mean(dim=(0, 1)))
    assert means["blocks.1.mlp.hook_post"].shape == (model.cfg.d_mlp,)


def test_layer_and_neuron_ablations_edit_their_hook_points():
    model = tiny_model(d_mlp=16)
    idx = tokens(model)
    ablation = Ablation(attn_layers=(0,), mlp_layers=(1,), neurons=((0, 3), (0, 5)))
    cache = cached_with(model, idx, ablation_hooks([ablation], None, None))
    assert torch.count_nonzero(cache["blocks.0.hook_attn_out"]) == 0
    assert torch.count_nonzero(cache["blocks.1.hook_mlp_out"]) == 0
    post = cache["blocks.0.mlp.hook_post"]
    assert torch.count_nonzero(post[..., [3, 5]]) == 0 and torch.count_nonzero(post[..., 4]) > 0


@pytest.mark.slow
def test_mean_ablation_of_a_constant_head_changes_nothing():
    model = tiny_model(n_heads=2, d_model=8)
    with torch.no_grad():  # head 1 of layer 0: values independent of the input, so its output is constant
        d, dh = model.cfg.d_model, model.cfg.d_head
        v_rows = slice(2 * d + dh, 2 * d + 2 * dh)
        model.blocks[0].attn.W_qkv.weight[v_rows] = 0.0
        model.blocks[0].attn.W_qkv.bias[v_rows] = torch.linspace(-1, 1, dh)
    idx, windows = tokens(model), windows_for(model)
    means = component_means(model, windows)
    ablation = Ablation(heads=((0, 1),))
    assert torch.allclose(ablated_logits(model, idx, ablation, means), model(idx)[0], atol=1e-6)
    assert not torch.allclose(ablated_logits(model, idx, ablation, None), model(idx)[0], atol=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_importance_map_equals_ablating_one_unit_at_a_time(mode):
    model = tiny_model(n_layers=2, n_heads=2)
    windows = windows_for(model)
    means = mode_means(model, mode, windows)
    imap = importance_map(model, windows, mode, tokens_per_pass=3 * windows[:, 1:].numel())  # several passes
    base = validation_loss(model, windows)
    assert imap.base_loss == pytest.approx(base, abs=1e-6)
    for layer in range(2):
        for head in range(2):
            alone = validation_loss(model, windows, Ablation(heads=((layer, head),)), means)
            assert imap.head_increase[layer, head] == pytest.approx(alone - base, abs=1e-5)
        alone = validation_loss(model, windows, Ablation(mlp_layers=(layer,)), means)
        assert imap.mlp_increase[layer] == pytest.approx(alone - base, abs=1e-5)
    assert imap.top_head() == tuple(int(i) for i in divmod(int(imap.head_increase.argmax()), 2))


def test_importance_map_of_an_attention_only_model_has_no_mlp_row():
    model = tiny_model(attn_only=True)
    imap = importance_map(model, windows_for(model), "zero")
    assert imap.mlp_increase is None and imap.head_increase.shape == (2, 2)


@pytest.mark.slow
def test_generation_is_identical_when_nothing_is_ablated_and_differs_when_much_is():
    model = tiny_model()
    settings = SamplingSettings(1.0, None, 1.0, 0.0)
    clean = ablated_generation(model, [1, 2, 3], Ablation(), None, 12, settings, seed=7)
    again = ablated_generation(model, [1, 2, 3], Ablation(), None, 12, settings, seed=7)
    assert [s.token for s in clean] == [s.token for s in again]
    knocked = ablated_generation(model, [1, 2, 3], Ablation(attn_layers=(0, 1), mlp_layers=(0, 1)), None, 12,
                                 settings, seed=7)
    assert [s.model_prob for s in knocked] != [s.model_prob for s in clean]
    assert all(not hp.fns for hp in model.hook_dict.values())  # no hook left on the model


def test_eval_windows_are_the_same_every_time_and_fit_a_short_text():
    data = torch.arange(100)
    assert torch.equal(eval_windows(data, 8), eval_windows(data, 8))
    short = eval_windows(torch.arange(5), 8, n_windows=3)
    assert short.shape == (3, 5)
    with pytest.raises(AblationError, match="shorter than two tokens"):
        eval_windows(torch.arange(1), 8)


@pytest.mark.parametrize("ablation, message", [
    (Ablation(heads=((0, 2),)), "head L0·H2 does not exist"),
    (Ablation(heads=((5, 0),)), "layer 5 does not exist"),
    (Ablation(neurons=((0, 999),)), "neuron 0.999 does not exist"),
])
def test_units_out_of_range_are_refused(ablation, message):
    with pytest.raises(AblationError, match=message):
        ablation.validate(tiny_model().cfg)


def test_mlp_ablation_on_attention_only_model_is_refused():
    with pytest.raises(AblationError, match="attention-only"):
        Ablation(mlp_layers=(0,)).validate(tiny_model(attn_only=True).cfg)


def test_unknown_mode_is_refused():
    with pytest.raises(AblationError, match="mean, zero"):
        mode_means(tiny_model(), "half", None)


@pytest.mark.slow
def test_running_from_a_layer_equals_the_full_forward_pass():
    from model_core.analysis.ablation import logits_from_layer

    model = tiny_model(n_layers=3)
    idx = tokens(model)
    logits, cache = model.run_with_cache(idx)
    for layer in range(3):
        assert torch.allclose(logits_from_layer(model, layer, cache[f"blocks.{layer}.hook_resid_pre"]), logits,
                              atol=1e-6)



def test_describe_names_heads_and_layers_as_the_app_does():
    """The knock-out captions quote describe(): a head is L1·H3 and the FFN is called FFN, as the tab says."""
    assert Ablation(heads=((1, 3),), attn_layers=(0,), mlp_layers=(2,), neurons=((0, 17),)).describe() == \
        "head L1·H3, attention layer 0, FFN layer 2, neuron 0.17"
