"""How fast smollm2-135m generates here, beside Hugging Face transformers on the same GGUF file (bench.pretrained's
generation rows): every generation path of ours and transformers take turns, greedy, KV cache, the same torch
threads, so load on a shared machine hits each alike; then Compare (4 settings) against one generation, and how
often each path's greedy chat answers equal float32's."""
import os
import time

import torch

from bench.timing import interleaved_seconds
from bench.transformers_reference import reference_greedy, reference_model
from explorer.common.controls import DEFAULT_COMPARISON
from explorer.common.shipped_list import pretrained_path
from explorer.state.shipped import GENERATION_PATH_ENV
from model_core.data.chat import check_prompts
from model_core.model.generation_paths import FORMATS, generation_twin
from model_core.model.sampling import SamplingSettings, compare, generate

MODEL = "smollm2-135m"
THEIRS = "transformers (float32)"


def wait_for_choice(model, timeout: float = 1800.0):
    """The PathChoice of the thread the model's opening started (explorer.state.shipped), once it has chosen."""
    if os.environ.get(GENERATION_PATH_ENV) == "float32":
        raise SystemExit(f"{GENERATION_PATH_ENV}=float32 is set: the model measures no generation path; unset it")
    deadline = time.monotonic() + timeout
    while "generation_choice" not in model.shared:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no generation path chosen within {timeout:.0f} s")
        time.sleep(0.5)
    return model.shared["generation_choice"]


def path_twins(model) -> dict:
    """{path: its generation twin} for every path that applies to the model's weights."""
    twins = {}
    for name in FORMATS:
        try:
            twins[name] = generation_twin(model, name)
        except (ValueError, RuntimeError):
            pass
    return twins


def greedy(model, ids, tokens: int, stop=None) -> list[int]:
    return [s.token for s in generate(model, ids, tokens, 0.0, stop_token=stop, keep_distributions=False)]


def side_by_side(twins: dict, ids: list[int], tokens: int, rounds: int) -> dict:
    """Greedy tokens/s of every path and of transformers, interleaved; and whether each drew transformers' tokens."""
    began = time.perf_counter()
    reference = reference_model(pretrained_path(MODEL))
    loaded = time.perf_counter() - began
    contenders = {f"ours, {name} path": (lambda twin=twin: greedy(twin, ids, tokens)) for name, twin in twins.items()}
    contenders[THEIRS] = lambda: reference_greedy(reference, ids, tokens)
    seconds = interleaved_seconds(contenders, rounds, repeats=1, warmup=1)
    theirs = reference_greedy(reference, ids, tokens)
    same = {name: fn() == theirs for name, fn in contenders.items()}
    return {"tokens_per_s": {name: tokens / s for name, s in seconds.items()}, "same_tokens": same,
            "load_seconds": loaded}


def compare_against_one(model, ids: list[int], tokens: int, rounds: int) -> dict:
    """Seconds of the Sampling tab's Compare (its 4 default settings) and of one sampled generation, interleaved."""
    settings = [SamplingSettings(t, k or None, p, m) for t, k, p, m in DEFAULT_COMPARISON]
    seconds = interleaved_seconds({
        "one generation": lambda: list(generate(model, ids, tokens, 1.0, seed=0, keep_distributions=False)),
        f"Compare, {len(settings)} settings": lambda: compare(model, ids, settings, tokens, seed=0),
    }, rounds, repeats=1, warmup=1)
    return seconds


def agreement(model, twins: dict, tokenizer, tokens: int, stop) -> dict[str, list[int]]:
    """For each path: per check prompt, the greedy chat tokens it draws before it first differs from the float32
    model's own modules (cached, no decoder), `tokens` when it never does."""
    plain = generation_twin(model, "float32")
    plain.decoder = None  # the hooked modules' arithmetic: the reference
    prompts = check_prompts(tokenizer.chat_template, tokenizer.encode)
    expected = [greedy(plain, ids, tokens, stop) for ids in prompts]
    found = {}
    for name, twin in twins.items():
        answers = [greedy(twin, ids, tokens, stop) for ids in prompts]
        found[name] = [tokens if a == b else next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                       for a, b in zip(answers, expected)]
    return found


def threads_note() -> str:
    return f"{torch.get_num_threads()} torch thread{'s' if torch.get_num_threads() > 1 else ''}"
