import pytest
import torch

from tests.helpers import tiny_model, tokens

SEED_ARCHITECTURES = {
    # 002 StatQuest: one head, d_model 2, no norm, attention only, sinusoidal, untied output with bias
    "seed002": dict(d_model=2, n_heads=1, n_layers=1, norm="none", attn_only=True, positional="sinusoidal",
                    tie_weights=False),
    # 003 baby names script: pre-RMSNorm, SwiGLU FFN, no biases, tied weights
    "seed003": dict(d_model=32, n_heads=4, n_layers=2, norm="rmsnorm", activation="swiglu", bias=False),
    # 004 decoder blocks: post-LayerNorm, ReLU FFN, sinusoidal positions, dropout
    "seed004": dict(d_model=6, n_heads=2, norm_placement="post", activation="relu", positional="sinusoidal",
                    dropout=0.1),
}


def expected_hook_names(n_layers: int, attn_only: bool = False) -> list[str]:
    names = ["hook_embed", "hook_pos_embed"]
    for L in range(n_layers):
        names += [f"blocks.{L}.hook_resid_pre", f"blocks.{L}.ln1.hook_normalized"]
        names += [f"blocks.{L}.attn.hook_{n}" for n in
                  ("q", "k", "v", "attn_scores_unmasked", "attn_scores", "pattern", "z")]
        names += [f"blocks.{L}.hook_attn_out", f"blocks.{L}.hook_resid_mid"]
        if not attn_only:
            names += [f"blocks.{L}.ln2.hook_normalized", f"blocks.{L}.mlp.hook_pre", f"blocks.{L}.mlp.hook_post",
                      f"blocks.{L}.hook_mlp_out"]
        names.append(f"blocks.{L}.hook_resid_post")
    return names + ["ln_final.hook_normalized"]


def test_full_ordered_hook_name_list():
    assert tiny_model(n_layers=2).hook_names == expected_hook_names(2)


def test_attention_only_model_lacks_mlp_hooks():
    assert tiny_model(attn_only=True).hook_names == expected_hook_names(2, attn_only=True)


def test_swiglu_adds_the_ungated_branch_hook():
    names = tiny_model(activation="swiglu").hook_names
    assert "blocks.0.mlp.hook_pre_linear" in names and "blocks.1.mlp.hook_post" in names


@pytest.mark.slow
@pytest.mark.parametrize("arch", SEED_ARCHITECTURES.values(), ids=SEED_ARCHITECTURES.keys())
def test_seed_architectures_run_and_learn(arch):
    model = tiny_model(**arch).train()
    idx = tokens(model, T=8, batch=4)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-2)
    first = None
    for _ in range(30):
        logits, loss = model(idx[:, :-1], idx[:, 1:])
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert logits.shape == (4, 7, model.cfg.vocab_size)
    assert loss.item() < 0.8 * first  # it memorises the 28 random targets: clearly lower after 30 steps


def test_logits_at_every_position_and_loss_is_cross_entropy():
    model = tiny_model()
    idx = tokens(model, T=6, batch=3)
    logits, loss = model(idx[:, :-1], idx[:, 1:])
    assert logits.shape == (3, 5, 11)
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, 11), idx[:, 1:].reshape(-1))
    assert torch.allclose(loss, expected)
    assert model(idx)[1] is None


@pytest.mark.parametrize("arch", [{}, dict(n_layers=1, norm="none", activation="relu"), dict(norm_placement="post"),
                                  dict(parallel_blocks=True)])
def test_a_loss_on_the_last_position_only_computes_that_position_alone_and_equals_the_full_one(arch):
    model = tiny_model(**arch)
    idx = tokens(model, T=6, batch=3)
    targets = torch.full_like(idx, -1)
    targets[:, -1] = idx[:, 0]  # a task's answer: no target before the last position
    full, _ = model(idx)
    logits, loss = model(idx, targets)
    assert logits.shape == (3, 1, 11)
    torch.testing.assert_close(logits, full[:, -1:], rtol=1e-5, atol=1e-5 * full.abs().max().item())
    torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(full[:, -1], idx[:, 0]))


def test_a_target_before_the_last_position_keeps_every_positions_logits():
    model = tiny_model()
    idx = tokens(model, T=6, batch=3)
    targets = torch.full_like(idx, -1)
    targets[0, 2] = 1
    assert model(idx, targets)[0].shape == (3, 6, 11)


def test_the_initialisations_draw_the_stated_scales():
    gpt2, wide = tiny_model(d_model=64, n_layers=2), tiny_model(d_model=64, n_layers=2, init="1/sqrt(d_model)")
    for model, std, out_std in ((gpt2, 0.02, 0.02 / 2), (wide, 64 ** -0.5, 64 ** -0.5)):
        weights = dict(model.named_parameters())
        assert weights["embed.weight"].std().item() == pytest.approx(std, rel=0.1)
        assert weights["blocks.0.mlp.W_in.weight"].std().item() == pytest.approx(std, rel=0.1)
        assert weights["blocks.1.mlp.W_out.weight"].std().item() == pytest.approx(out_std, rel=0.1)
        assert all(p.abs().max() == 0 for name, p in weights.items() if name.endswith(".bias"))


def test_an_unknown_initialisation_names_the_choices():
    with pytest.raises(ValueError, match="init must be one of"):
        tiny_model(init="xavier")


def test_too_long_sequence_is_a_clear_error():
    model = tiny_model()
    with pytest.raises(ValueError, match="longer than block_size 8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_tied_weights_share_storage_and_count_once():
    tied, untied = tiny_model(tie_weights=True, bias=False), tiny_model(tie_weights=False, bias=False)
    assert tied.unembed.weight is tied.embed.weight
    assert untied.num_params() - tied.num_params() == 11 * 8


@pytest.mark.parametrize("arch", [{}, dict(norm="rmsnorm", activation="swiglu"), dict(positional="sinusoidal"),
                                  dict(norm_placement="post", activation="relu")])
def test_fast_path_equals_explicit_path(arch):
    model = tiny_model(**arch)
    idx = tokens(model)
    fast, _ = model(idx)
    for block in model.blocks:
        block.attn.force_explicit = True
    explicit, _ = model(idx)
    assert torch.allclose(fast, explicit, atol=1e-5)


def test_fast_path_used_when_nothing_is_hooked(monkeypatch):
    model = tiny_model()
    calls = []
    original = model.blocks[0].attn.explicit_attention
    monkeypatch.setattr(model.blocks[0].attn, "explicit_attention", lambda *a: calls.append(1) or original(*a))
    model(tokens(model))
    assert calls == []
    model.run_with_cache(tokens(model), names_filter="blocks.0.attn.hook_pattern")
    assert calls == [1]
