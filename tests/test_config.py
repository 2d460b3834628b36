import pytest

from model_core import ConfigError, GPTConfig
from tests.helpers import tiny_config


@pytest.mark.parametrize("overrides, message", [
    (dict(d_model=30, n_heads=4), "d_model (30) must be divisible by n_heads (4)"),
    (dict(d_model=0), "d_model must be a positive whole number"),
    (dict(n_layers=-1), "n_layers must be a positive whole number"),
    (dict(vocab_size=2.5), "vocab_size must be a positive whole number"),
    (dict(activation="tanh"), "activation must be one of gelu, gelu_tanh, relu, relu2, swiglu"),
    (dict(norm="batchnorm"), "norm must be one of layernorm, rmsnorm, none"),
    (dict(norm_placement="middle"), "norm_placement must be one of pre, post"),
    (dict(positional="rotary"), "positional must be one of learned, sinusoidal, rope, none"),
    (dict(positional="rope", d_model=12, n_heads=4), "d_head (d_model / n_heads = 3) must be even: use d_model=16"),
    (dict(qk_norm="on"), "qk_norm must be true or false"),
    (dict(positional="sinusoidal", d_model=9, n_heads=1), "sinusoidal positions need an even d_model"),
    (dict(dropout=1.0), "dropout must be in [0, 1)"),
    (dict(tie_weights="yes"), "tie_weights must be true or false"),
    (dict(d_mlp=0), "d_mlp must be a positive whole number or None"),
])
def test_every_config_error_says_what_is_wrong(overrides, message):
    with pytest.raises(ConfigError) as err:
        tiny_config(**overrides)
    assert message in str(err.value)


def test_divisibility_error_suggests_a_fix():
    with pytest.raises(ConfigError, match="use n_heads=3"):
        GPTConfig(d_model=30, n_heads=4)


def test_d_mlp_defaults_follow_the_activation():
    assert GPTConfig(d_model=48, n_heads=4).d_mlp == 192
    assert GPTConfig(d_model=48, n_heads=4, activation="swiglu").d_mlp == 128  # 8/3 rule (seed 003)


@pytest.mark.parametrize("overrides", [dict(activation="swiglu", norm="rmsnorm"),
                                       dict(positional="rope", qk_norm=True, activation="relu2", tie_weights=False)])
def test_config_round_trips_and_rejects_unknown_keys(overrides):
    cfg = tiny_config(**overrides)
    assert GPTConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="unknown model config keys"):
        GPTConfig.from_dict({**cfg.to_dict(), "n_embd": 3})


def test_a_config_saved_before_the_new_options_loads_with_the_classic_design():
    old = {k: v for k, v in tiny_config().to_dict().items() if k != "qk_norm"}  # as written by older versions
    cfg = GPTConfig.from_dict(old)
    assert (cfg.positional, cfg.qk_norm, cfg.activation) == ("learned", False, "gelu")


def test_classroom_is_the_fast_design_and_gpt2_classic_keeps_the_shipped_one():
    from model_core.training.presets import get_preset
    fast, classic = get_preset("classroom"), get_preset("gpt2-classic")
    cfg, tc = fast.model_config(65), fast.train_config()
    assert (cfg.positional, cfg.qk_norm, cfg.activation, tc.optimizer) == ("rope", False, "gelu", "muon")
    cfg, tc = classic.model_config(65), classic.train_config()
    assert (cfg.positional, cfg.qk_norm, cfg.activation, tc.optimizer) == ("learned", False, "gelu", "adamw")
    # the fast design is also a smaller model (more steps in the same minute): 3 layers, FFN 2 x d_model
    assert (fast.model["n_layers"], fast.model["d_mlp"], classic.model["n_layers"]) == (3, 256, 4)
    shape = ("n_heads", "d_model", "block_size")
    assert {k: fast.model[k] for k in shape} == {k: classic.model[k] for k in shape}


def test_a_presets_ffn_width_follows_a_new_d_model_unless_given():
    from model_core.training.presets import get_preset
    fast = get_preset("classroom")
    assert fast.model_config(65).d_mlp == 256
    assert fast.model_config(65, d_model=128).d_mlp == 256  # its own d_model: its own width
    assert fast.model_config(65, d_model=64).d_mlp == 4 * 64  # another d_model: the automatic width
    assert fast.model_config(65, d_model=64, d_mlp=96).d_mlp == 96
    assert fast.model_config(65, d_model=64, n_heads=2, activation="swiglu").d_mlp == int(8 * 64 / 3)
