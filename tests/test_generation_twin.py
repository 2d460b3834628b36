"""A frozen (pretrained) model generates with a twin whose linear weights are bfloat16: built once and shared by
every copy, its embeddings the model's own tensors, its logits close to the float32 model's."""
import torch

from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from model_core.model.layers import Bfloat16Linear, Bfloat16Unembed
from model_core.model.sampling import generate


def frozen_model() -> GPT:
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=40, block_size=32, d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, norm="rmsnorm",
                    positional="rope", activation="swiglu", bias=False)
    return GPT(cfg).eval().freeze()


def test_copies_share_one_twin_that_shares_the_embeddings():
    model = frozen_model()
    copy_a, copy_b = model.copy(), model.copy()
    twin = copy_a.for_generation()
    assert copy_b.for_generation() is twin and model.for_generation() is twin
    assert twin.embed.weight.data_ptr() == model.embed.weight.data_ptr()
    linears = [m for m in twin.modules() if isinstance(m, Bfloat16Linear)]
    assert linears and all(m.weight.dtype == torch.bfloat16 for m in linears)
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the model itself is untouched
    ids = torch.randint(0, 40, (1, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert (twin(ids)[0] - model(ids)[0]).abs().max() < 0.05


def test_a_trainable_model_generates_with_itself_and_a_frozen_one_with_its_twin():
    trainable = GPT(GPTConfig(vocab_size=40, block_size=32, d_model=16, n_heads=2, n_layers=1)).eval()
    assert trainable.for_generation() is trainable
    model = frozen_model()
    steps = list(generate(model.copy(), [1, 2, 3], 8, temperature=0.0))
    assert len(steps) == 8 and "generation" in model.shared


def test_a_bfloat16_linear_keeps_only_the_weights_and_outputs_rounding():
    """The input's rounding is made up by its low part: what is left is the bfloat16 rounding of the two halves of
    the output (2^-9 each, relative to the product) of the product with the rounded weights."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 48)
    x = torch.randn(3, 5, 64) * 4
    twin = Bfloat16Linear(linear)
    weight = linear.weight.to(torch.bfloat16).float()
    with torch.no_grad():
        product = torch.nn.functional.linear(x, weight)  # (3, 5, 48)
        y = twin(x)
        rounded_input = torch.nn.functional.linear(x.to(torch.bfloat16).float(), weight)
    assert y.shape == (3, 5, 48) and y.dtype == torch.float32
    bound = product.abs() * 2 ** -8 + 1e-5
    assert ((y - linear.bias - product).abs() <= bound).all()
    assert not ((rounded_input - product).abs() <= bound).all()  # rounding the input alone breaks the bound


def test_the_likeliest_logits_of_the_twin_are_float32_products():
    torch.manual_seed(1)
    unembed = torch.nn.Linear(32, 500, bias=False)
    x = torch.randn(2, 3, 32)
    twin = Bfloat16Unembed(unembed, exact=8)
    with torch.no_grad():
        logits, reference = twin(x), unembed(x)
    top = logits.topk(8, dim=-1).indices
    assert torch.allclose(logits.gather(-1, top), reference.gather(-1, top), atol=1e-5)
    assert (logits - reference).abs().max() < 0.05  # the rest: bfloat16 products
    assert twin.float_weight is unembed.weight  # no copy of the float32 matrix
