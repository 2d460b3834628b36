"""A frozen (pretrained) model generates with a twin that every copy shares: its module tree is the model's own
tensors (the prompt), its Decoder steps one token at a time through the linear layers in one weight format. Each
format's step computes what the model's own extend() computes, within that format's rounding."""
import pytest
import torch

from model_core.model.config import GPTConfig
from model_core.model.decoder import Decoder
from model_core.model.generation_paths import FORMATS, generation_twin
from model_core.model.gpt import GPT
from model_core.model.kv_cache import KVCache
from model_core.model.quantized import Bfloat16Unembed, Int4Linear, Int8Unembed, int4_grid
from model_core.model.sampling import generate
from tests.helpers import LLAMA, frozen_grid_model, grid_weights

OTHER = dict(norm="layernorm", positional="rope", rotary_dims=8, activation="gelu", bias=True)  # partial rotary, biases


def test_copies_share_one_twin_over_the_models_own_tensors():
    model = frozen_grid_model()
    copy_a, copy_b = model.copy(), model.copy()
    twin = copy_a.for_generation()
    assert copy_b.for_generation() is twin and model.for_generation() is twin and twin is not model
    assert twin.embed.weight.data_ptr() == model.embed.weight.data_ptr()
    assert twin.decoder.layers[0].qkv.weight is model.blocks[0].attn.W_qkv.weight  # float32 until a path is picked
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the model itself is untouched


@pytest.mark.slow
@pytest.mark.parametrize("kind", [LLAMA, OTHER], ids=["llama", "layernorm-gelu-partial-rotary-bias"])
@pytest.mark.parametrize("path", list(FORMATS))
def test_each_paths_step_computes_what_the_model_extends(kind, path):
    model = frozen_grid_model(**kind)
    twin = generation_twin(model, path)
    ids = torch.randint(0, 96, (3, 9), generator=torch.Generator().manual_seed(2))
    ours, theirs = KVCache.for_model(twin, 3, 9), KVCache.for_model(model, 3, 9)
    with torch.inference_mode():
        twin.extend(ids[:, :-1], ours)  # the prompt: the twin's modules, float32
        model.extend(ids[:, :-1], theirs)
        stepped = twin.extend(ids[:, -1:], ours, last_only=True)  # (3, 1, V): the decoder
        expected = model.extend(ids[:, -1:], theirs, last_only=True)
    scale = expected.abs().max()
    tolerance = 1e-5 if path == "float32" else 0.03  # rounded weights: ~2^-9 each, summed over 2 layers
    assert stepped.shape == expected.shape == (3, 1, 96) and ours.length == theirs.length == 9
    assert (stepped - expected).abs().max() <= tolerance * scale
    for mine, reference in zip(ours.layers, theirs.layers):  # the step wrote its keys and values where extend does
        assert (mine.k[:, :, 8] - reference.k[:, :, 8]).abs().max() <= tolerance * reference.k[:, :, 8].abs().max()
        assert (mine.v[:, :, 8] - reference.v[:, :, 8]).abs().max() <= tolerance * reference.v[:, :, 8].abs().max()


@pytest.mark.slow
def test_a_frozen_model_generates_greedily_as_its_float32_modules_do():
    model = frozen_grid_model()
    steps = [s.token for s in generate(model.copy(), [1, 2, 3], 12, temperature=0.0)]
    plain = model.copy()
    handle = plain.hook_dict["ln_final.hook_normalized"].add_hook(lambda tensor, hook: tensor)  # hooked: no twin
    try:
        reference = [s.token for s in generate(plain, [1, 2, 3], 12, temperature=0.0)]
    finally:
        handle.remove()
    assert steps == reference and "generation" in model.shared


def test_an_architecture_without_a_decoder_generates_with_the_model_itself():
    cfg = GPTConfig(vocab_size=40, block_size=32, d_model=16, n_heads=2, n_layers=1)  # learned positions
    assert not Decoder.supports(cfg)
    model = GPT(cfg).eval().freeze()
    assert model.for_generation() is model
    assert GPT(cfg).eval().for_generation() is not model  # a trainable model: itself, as always


def test_int4_grid_recovers_a_q4_1_grid_and_refuses_other_weights():
    weight = grid_weights((48, 64), seed=3)
    q, step, low = int4_grid(weight)
    assert q.min() == 0 and q.max() == 15
    rebuilt = low.repeat_interleave(32, 1) + step.repeat_interleave(32, 1) * q
    assert torch.allclose(rebuilt, weight, rtol=0, atol=1e-6 * weight.abs().max())
    assert int4_grid(torch.randn(48, 64)) is None  # off the grid: 4 bits would change it
    assert int4_grid(torch.randn(48, 60)) is None  # no whole groups of 32


def test_an_int4_layer_keeps_only_the_rounding_of_its_scales_input_and_outputs():
    """The kernel rebuilds a weight as (q - 8) * scale + zero from bfloat16 scale and zero (each off by 2^-9 at
    most), multiplies it by the input rounded to bfloat16 (2^-9) and returns the product in bfloat16 (2^-9):
    nothing else is lost."""
    weight = grid_weights((64, 96), seed=4)
    x = torch.randn(5, 96) * 3
    _, step, low = int4_grid(weight)
    per_weight = 2 ** -9 * (16 * step + low.abs()).repeat_interleave(32, 1)  # (64, 96): bound of each weight's error
    y, exact = Int4Linear(weight)(x), x @ weight.T
    rounded_input = 2 ** -9 * x.abs() @ (weight.abs() + per_weight).T
    bound = x.abs() @ per_weight.T + rounded_input + 2 ** -8 * exact.abs() + 1e-5
    assert y.dtype == torch.float32 and ((y - exact).abs() <= bound).all()
    assert ((y - exact).abs() > 0).any()  # it did round: the test can tell


@pytest.mark.parametrize("unembed", [Bfloat16Unembed, Int8Unembed])
def test_the_likeliest_logits_of_a_rounded_unembedding_are_float32_products(unembed):
    torch.manual_seed(1)
    weight, x = torch.randn(500, 32), torch.randn(4, 32)
    logits, reference = unembed(weight, exact=8)(x), x @ weight.T
    top = logits.topk(4, dim=-1).indices  # well inside the 8 recomputed: a rounded 9th cannot pass them
    assert torch.allclose(logits.gather(-1, top), reference.gather(-1, top), rtol=1e-5, atol=1e-5)
    assert torch.equal(top, reference.topk(4, dim=-1).indices)
    assert (logits - reference).abs().max() <= 0.02 * reference.abs().max()  # the rest: rounded products
