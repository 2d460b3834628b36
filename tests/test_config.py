import pytest

from model_core import ConfigError, GPTConfig
from tests.helpers import tiny_config


@pytest.mark.parametrize("overrides, message", [
    (dict(d_model=30, n_heads=4), "d_model (30) must be divisible by n_heads (4)"),
    (dict(d_model=0), "d_model must be a positive whole number"),
    (dict(n_layers=-1), "n_layers must be a positive whole number"),
    (dict(vocab_size=2.5), "vocab_size must be a positive whole number"),
    (dict(activation="tanh"), "activation must be one of gelu, relu, swiglu"),
    (dict(norm="batchnorm"), "norm must be one of layernorm, rmsnorm, none"),
    (dict(norm_placement="middle"), "norm_placement must be one of pre, post"),
    (dict(positional="rotary"), "positional must be one of learned, sinusoidal"),
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


def test_config_round_trips_and_rejects_unknown_keys():
    cfg = tiny_config(activation="swiglu", norm="rmsnorm")
    assert GPTConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="unknown model config keys"):
        GPTConfig.from_dict({**cfg.to_dict(), "n_embd": 3})
