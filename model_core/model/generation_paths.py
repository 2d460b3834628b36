"""Which way a frozen (pretrained) model generates on this machine: chosen once, by measuring.

A path is a twin of the model (its own module tree over the same tensors, for the prompt) with a Decoder
(model_core.model.decoder) that steps one token at a time through the linear layers in one weight format
(model_core.model.quantized): float32, bfloat16 or 4-bit. Which is fastest depends on the CPU: bfloat16 halves the
bytes read per token but is slow without native bfloat16 arithmetic (AVX512-BF16, AMX); 4-bit reads a sixth of
float32's bytes but only applies when the weights already sit on a 4-bit grid (a Q4_1 GGUF file), and its kernel's
work grows with the rows: one generation and Compare's 4 settings (a batch of 4 rows) may each have another
fastest path, so each row count of WIDTHS gets its own.

The choice: time a one-token step of every path at each width (rounds interleaved, so load hits each alike), then,
fastest first, keep the first path whose greedy answers to the check prompts equal float32's on at least AGREEMENT
of them (float32 itself needs no check; each path is checked once). The other twins are dropped."""
import copy
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import torch

from model_core.model.decoder import Decoder
from model_core.model.kv_cache import KVCache, NextTokenLogits
from model_core.model.quantized import Bfloat16Linear, Bfloat16Unembed, Float32Linear, Int4Linear, Int8Unembed

REFERENCE = "float32"
FORMATS = {  # path: (its linear layers, its unembedding, gate and up fused)
    "float32": (Float32Linear, Float32Linear, False),
    "bfloat16": (Bfloat16Linear, Bfloat16Unembed, True),
    "int4": (Int4Linear, Int8Unembed, True),  # the unembedding is not on a 4-bit grid (Q8_0 in SmolLM2's file)
}
AGREEMENT = 0.9  # share of check prompts whose greedy answers must equal float32's (9 of 10)
CHECK_TOKENS = 40  # greedy tokens per check prompt
WIDTHS = (1, 4)  # rows generated at once: one generation; Compare's 4 default settings (its 2 to 6 rows use it)


class Cancelled(Exception):
    """The measurement was asked to stop (its process is ending)."""


def never() -> bool:
    return False


def width_of(rows: int) -> int:
    """The WIDTHS entry whose path generates `rows` rows at once."""
    return WIDTHS[0] if rows <= WIDTHS[0] else WIDTHS[-1]


@dataclass
class PathChoice:
    """What choose_generation_path measured and chose."""

    chosen: dict[int, str]  # rows at once (WIDTHS) -> path
    ms_per_token: dict[int, dict[str, float]]  # rows at once -> path -> median wall ms of a one-token step
    agreement: dict[str, tuple[int, int]] = field(default_factory=dict)  # checked path: (equal answers, prompts)
    unavailable: dict[str, str] = field(default_factory=dict)  # path: why it could not be built
    seconds: float = 0.0  # the whole measurement
    threads: int = 1  # torch threads while measuring

    def sentence(self) -> str:
        parts = []
        for rows, name in self.chosen.items():
            ms = self.ms_per_token[rows]
            others = ", ".join(f"{other} {value:.1f}" for other, value in ms.items() if other != name)
            parts.append(f"{'one row' if rows == 1 else f'{rows} rows (Compare)'} with its {name} path: "
                         f"{ms[name]:.1f} ms a token{f' ({others})' if others else ''}")
        said = (f"generates {' and '.join(parts)} on {self.threads} torch thread{'s' if self.threads > 1 else ''}")
        for name, (equal, total) in self.agreement.items():
            said += f"; {name}'s greedy answers equal float32's on {equal} of {total} check prompts"
        for name, why in self.unavailable.items():
            said += f"; no {name} path ({why})"
        return said + f"; measured in {self.seconds:.1f} s."


def generation_twin(model, path: str):
    """A twin of the frozen model that generates through `path` (a FORMATS key); ValueError if the format does not
    apply to these weights or the architecture has no Decoder."""
    if not Decoder.supports(model.cfg):
        raise ValueError("this architecture has no one-token decoder")
    twin = copy.deepcopy(model)  # frozen: a module tree of its own over the same tensors
    twin.shared = None
    twin.decoder = Decoder(twin, *FORMATS[path])
    return twin.eval()


def fastest_agreeing(ms_per_token: dict[str, float], agrees: Callable[[str], bool]) -> str:
    """The fastest path that agrees with float32, asking `agrees` fastest first and only as far as needed."""
    for name in sorted(ms_per_token, key=ms_per_token.get):
        if name == REFERENCE or agrees(name):
            return name
    return REFERENCE


@torch.inference_mode()
def step_milliseconds(twins: dict, prompt: Sequence[int], rows: int = 1, rounds: int = 5, steps: int = 4,
                      cancelled: Callable[[], bool] = never) -> dict[str, float]:
    """Median wall milliseconds of one cached one-token step of `rows` rows per twin, after the prompt; the twins
    take turns, in reversed order every other round, after one round of warm-up. Cancelled once cancelled()."""
    caches, last = {}, torch.tensor([[prompt[-1]]] * rows)
    for name, twin in twins.items():
        caches[name] = KVCache.for_model(twin, rows, len(prompt))
        twin.extend(torch.tensor([list(prompt[:-1])] * rows), caches[name])
    samples = {name: [] for name in twins}
    for r in range(rounds + 1):
        for name in (list(twins) if r % 2 == 0 else list(reversed(twins))):
            if cancelled():
                raise Cancelled
            began = time.perf_counter()
            for _ in range(steps):
                for layer in caches[name].layers:
                    layer.length = len(prompt) - 1  # forget the step before
                twins[name].extend(last, caches[name], last_only=True)
            if r:
                samples[name].append((time.perf_counter() - began) / steps)
    return {name: 1000 * statistics.median(s) for name, s in samples.items()}


@torch.inference_mode()
def greedy_answers(model, prompts: Sequence[Sequence[int]], tokens: int, stop_token: Optional[int] = None,
                   cancelled: Callable[[], bool] = never) -> list[list[int]]:
    """Each prompt's greedy continuation (up to `tokens`, cut after stop_token); prompts of one length run as one
    batch. Cancelled once cancelled()."""
    answers = {}
    for length in sorted({len(p) for p in prompts}):
        which = [i for i, p in enumerate(prompts) if len(p) == length]
        rows = [list(prompts[i]) for i in which]
        next_logits = NextTokenLogits(model, len(rows), length, True, tokens)
        for _ in range(tokens):
            if cancelled():
                raise Cancelled
            for row, token in zip(rows, next_logits(rows).argmax(-1).tolist()):
                row.append(token)
        for i, row in zip(which, rows):
            answer = row[length:]
            answers[i] = answer[:answer.index(stop_token) + 1] if stop_token in answer else answer
    return [answers[i] for i in range(len(prompts))]


def choose_generation_path(model, checks: Sequence[Sequence[int]], stop_token: Optional[int] = None,
                           check_tokens: int = CHECK_TOKENS, rounds: int = 5,
                           cancelled: Callable[[], bool] = never) -> tuple[dict, PathChoice]:
    """({rows at once: the chosen twin}, what was measured) for a frozen model: every path of FORMATS that applies
    is timed on the first check prompt at each width of WIDTHS, and at each the fastest whose greedy answers to
    `checks` equal float32's on AGREEMENT of them wins. Cancelled (between two steps) once cancelled()."""
    began = time.perf_counter()
    twins, unavailable = {}, {}
    for name in FORMATS:
        if cancelled():
            raise Cancelled
        try:
            twins[name] = generation_twin(model, name)
        except (ValueError, RuntimeError) as err:  # no 4-bit grid; a kernel this torch build lacks
            unavailable[name] = str(err)
    if REFERENCE not in twins:
        raise ValueError(f"no float32 path: {unavailable.get(REFERENCE)}")
    ms = {rows: step_milliseconds(twins, checks[0], rows, rounds, cancelled=cancelled) for rows in WIDTHS}
    answers, agreement = {}, {}

    def agrees(name: str) -> bool:
        if name not in agreement:
            if REFERENCE not in answers:
                answers[REFERENCE] = greedy_answers(twins[REFERENCE], checks, check_tokens, stop_token, cancelled)
            mine = greedy_answers(twins[name], checks, check_tokens, stop_token, cancelled)
            agreement[name] = (sum(a == b for a, b in zip(mine, answers[REFERENCE])), len(checks))
        return agreement[name][0] >= math.ceil(AGREEMENT * len(checks))

    chosen = {rows: fastest_agreeing(ms[rows], agrees) for rows in WIDTHS}
    choice = PathChoice(chosen, ms, agreement, unavailable, time.perf_counter() - began, torch.get_num_threads())
    return {rows: twins[name] for rows, name in chosen.items()}, choice
