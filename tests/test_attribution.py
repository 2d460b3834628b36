"""Direct logit attribution: the parts (embeddings, every head, every MLP layer, biases) sum to the model's own
logit or logit difference, for every architecture a pre-norm model can have."""
import numpy as np
import pytest
import torch

from model_core.analysis.attribution import AttributionError, logit_attribution
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from tests.helpers import sum_tolerance

ARCHS = {
    "gpt2": dict(),
    "llama-gqa": dict(norm="rmsnorm", positional="rope", n_kv_heads=2, bias=False, activation="swiglu"),
    "neox-parallel": dict(parallel_blocks=True, tie_weights=False, positional="rope", rotary_dims=4),
    "attn-only-no-norm": dict(attn_only=True, norm="none"),
    "qwen-biases": dict(norm="rmsnorm", positional="rope", bias=False, qkv_bias=True),
}


def random_model(**arch) -> GPT:
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50, block_size=32, d_model=32, n_heads=4, n_layers=3, **arch)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)  # biases and norm gains too: every part of the sum is exercised
    return model


def float32_error(attribution) -> float:
    """How far two float32 runs of the model may put the logit apart (a 21.4 logit differed by 3e-5 between
    a forward with hooks and one without on an Intel CPU): a few roundings at the size of its parts."""
    return sum_tolerance(attribution.embed, attribution.heads, attribution.mlps, attribution.bias)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS.values(), ids=ARCHS.keys())
@pytest.mark.parametrize("baseline", [None, 7])
def test_the_parts_sum_to_the_logit(arch, baseline):
    model = random_model(**arch)
    ids = torch.randint(0, 50, (20,), generator=torch.Generator().manual_seed(1)).tolist()
    attribution, _ = logit_attribution(model, ids, position=12, baseline=baseline)
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0][0, 12]
    expected = logits[attribution.target] - (logits[baseline] if baseline is not None else 0.0)
    assert attribution.target == int(logits.argmax())
    assert attribution.logit == pytest.approx(expected.item(), abs=float32_error(attribution))
    assert attribution.total == pytest.approx(attribution.logit, abs=float32_error(attribution))
    assert attribution.heads.shape == (3, 4)
    assert np.allclose(attribution.per_layer().sum() + attribution.embed + attribution.bias, attribution.total)


@pytest.mark.parametrize("arch", ARCHS.values(), ids=ARCHS.keys())
def test_a_heads_part_splits_by_the_position_it_read(arch):
    model = random_model(**arch)
    ids = torch.randint(0, 50, (16,), generator=torch.Generator().manual_seed(2)).tolist()
    attribution, run = logit_attribution(model, ids, position=-1, target=5, baseline=9)
    layer, head = attribution.top_head()
    by_source = run.head_by_source(layer, head, 5, 9)
    assert by_source.shape == (16,)
    assert by_source.sum() == pytest.approx(attribution.heads[layer, head], abs=sum_tolerance(by_source))


def test_a_head_knocked_out_changes_the_logit_by_about_its_part_in_a_linear_model():
    """With no norms and no MLPs, removing a head's output changes the logit by exactly its part (the last
    layer's heads feed nothing else)."""
    model = random_model(attn_only=True, norm="none")
    ids = list(range(10))
    attribution, _ = logit_attribution(model, ids, target=3)
    layer, head = 2, 1

    def knock_out(z, hook):
        z = z.clone()
        z[:, :, head] = 0
        return z
    with torch.no_grad():
        logits = model.run_with_hooks(torch.tensor([ids]), fwd_hooks=[(f"blocks.{layer}.attn.hook_z", knock_out)])[0]
    assert float(logits[0, -1, 3]) == pytest.approx(attribution.logit - attribution.heads[layer, head],
                                                    abs=float32_error(attribution))


def test_post_norm_and_bad_requests_get_sentences():
    with pytest.raises(AttributionError, match="post-norm"):
        logit_attribution(random_model(norm_placement="post"), [1, 2, 3])
    with pytest.raises(AttributionError, match="position must be between 0 and 2"):
        logit_attribution(random_model(), [1, 2, 3], position=5)
    with pytest.raises(AttributionError, match="outside the vocabulary"):
        logit_attribution(random_model(), [1, 2, 3], target=50)
