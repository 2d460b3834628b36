"""Sampling: filter a next-token distribution (temperature, top-k, top-p, min-p) and generate."""
import math
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

import numpy as np
import torch

from model_core.model.kv_cache import NextTokenLogits

# tokens a top-k/top-p row ranks before it sorts its whole vocabulary (only if they do not decide): at top_p 0.9
# SmolLM2's 1,024 likeliest held enough in 178 of 180 steps at temperature 1 (256: 160 of 180)
CANDIDATES = 1024
TOP_P_MARGIN = 1e-5  # how far the candidates' mass must pass top_p: far above float32 rounding of sums up to 1


class SamplingError(ValueError):
    """A sampling setting is out of range; the message says the valid range."""


@dataclass
class SamplingSettings:
    temperature: float = 1.0  # 0 = greedy; <1 sharper, >1 flatter
    top_k: Optional[int] = None  # keep the k most likely tokens; None or 0 = off
    top_p: float = 1.0  # keep the smallest set whose probability reaches p; 1 = off, 0 = best token only
    min_p: float = 0.0  # drop tokens below min_p x the best token's probability; 0 = off

    def validate(self) -> "SamplingSettings":
        t = self.temperature
        if not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise SamplingError(f"temperature must be a number ≥ 0 (0 = greedy), got {t!r}.")
        if self.top_k is not None and (not float(self.top_k).is_integer() or self.top_k < 0):
            raise SamplingError(f"top_k must be a whole number ≥ 0 (0 = off), got {self.top_k!r}.")
        for name in ("top_p", "min_p"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise SamplingError(f"{name} must be between 0 and 1, got {v!r}.")
        return self


def filter_logits(logits, temperature=1.0, top_k=None, top_p=1.0, min_p=0.0):
    """logits [..., V] -> (probs [..., V] summing to 1 over kept tokens, removed [..., V] bool).

    Order: temperature, then top-k, top-p and min-p on the tempered distribution."""
    s = SamplingSettings(temperature, top_k, top_p, min_p).validate()
    logits = torch.as_tensor(logits, dtype=torch.float32)
    rows = logits.reshape(-1, logits.size(-1))  # (B, V)
    probs, removed = RowFilter([s] * rows.size(0), rows.size(-1))(rows)
    return probs.view_as(logits), removed.view_as(logits)


def column(values) -> torch.Tensor:
    """Per-row values -> a (B, 1) float32 column that broadcasts over a row's V entries."""
    return torch.tensor(values, dtype=torch.float32).unsqueeze(1)


class RowFilter:
    """Each row's sampling settings as (B, 1) columns, built once: filters (B, V) logits, every row with its
    own temperature, top-k, top-p and min-p, in one set of tensor ops. A filter no row uses costs nothing, and
    an unused one in a row is a no-op there (top_k V, top_p inf, min_p 0)."""

    def __init__(self, settings: Sequence[SamplingSettings], vocab_size: int):
        V = vocab_size
        self.greedy = torch.tensor([[s.temperature == 0] for s in settings])  # (B, 1) bool
        self.temperature = column([s.temperature or 1.0 for s in settings])  # (B, 1); greedy rows: unused
        self.kth = torch.tensor([[min(int(s.top_k or V), V) - 1] for s in settings])  # (B, 1) rank of the k-th best
        self.top_p = column([s.top_p if s.top_p < 1.0 else math.inf for s in settings])  # (B, 1)
        self.min_p = column([s.min_p for s in settings])  # (B, 1)
        self.uses_greedy = any(s.temperature == 0 for s in settings)
        self.uses_top_k = any(s.top_k for s in settings)
        self.uses_top_p = any(s.top_p < 1.0 for s in settings)
        self.uses_min_p = any(s.min_p > 0.0 for s in settings)
        # only these rows are ranked (below_top), only these cut tokens; the others keep all
        self.ranked = [i for i, s in enumerate(settings) if s.top_k or s.top_p < 1.0]
        self.cutting = [i for i, s in enumerate(settings) if s.top_k or s.top_p < 1.0 or s.min_p > 0.0]
        self.tempered = any(s.temperature not in (0.0, 1.0) for s in settings)  # a row divides its logits

    def __call__(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """logits (B, V) -> (probs (B, V) summing to 1 over each row's kept tokens, removed (B, V) bool)."""
        probs = torch.softmax(logits / self.temperature if self.tempered else logits, dim=-1)  # (B, V)
        removed = torch.zeros_like(probs, dtype=torch.bool)
        if self.cutting:  # only the rows that cut are masked and renormalised (Compare: 1 of 4)
            rows = self.cutting
            cut = self.below_top(probs[rows], rows) if self.ranked else torch.zeros_like(removed[rows])
            if self.uses_min_p:
                p = probs[rows]
                cut |= p < self.min_p[rows] * p.max(dim=-1, keepdim=True).values
            kept = probs[rows].masked_fill(cut, 0.0)
            removed[rows], probs[rows] = cut, kept / kept.sum(-1, keepdim=True)
        if self.uses_greedy:  # all mass on the argmax
            best = torch.zeros_like(removed).scatter_(-1, logits.argmax(-1, keepdim=True), True)  # (B, V)
            probs, removed = torch.where(self.greedy, best.float(), probs), torch.where(self.greedy, ~best, removed)
        return probs, removed

    def below_top(self, probs: torch.Tensor, rows: list[int]) -> torch.Tensor:
        """probs (R, V) of these rows -> (R, V) bool: the tokens their top-k and top-p cut. Each row ranks only its
        CANDIDATES likeliest tokens (torch.topk: 0.5 ms where sorting 49k tokens takes 5 ms); a row whose cut
        those do not decide (k past them, or their mass short of top_p) sorts its whole vocabulary."""
        kth, top_p = self.kth[rows], self.top_p[rows]  # (R, 1) each
        best, order = probs.topk(min(CANDIDATES, probs.size(-1)), dim=-1)  # (R, n): a full sort's first n
        removed, decided = self.cut_of_ranked(probs, best, order, kth, top_p)
        if not bool(decided.all()):
            left = (~decided).nonzero()[:, 0]  # rows whose cut lies past their candidates
            sorted_p, full_order = probs[left].sort(dim=-1, descending=True)  # (L, V)
            removed[left] = self.cut_of_ranked(probs[left], sorted_p, full_order, kth[left], top_p[left])[0]
        return removed

    def cut_of_ranked(self, probs: torch.Tensor, best: torch.Tensor, order: torch.Tensor, kth: torch.Tensor,
                      top_p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows' probs (R, V), their n likeliest best (R, n) descending at indices order (R, n), their kth and
        top_p (R, 1) -> (removed (R, V) bool, decided (R,) bool: the rows whose cut these n tokens decide, as the
        whole sorted row would; the others' removed is not theirs). n = V is the whole sort: every row decided."""
        n, V = best.size(-1), probs.size(-1)
        removed = torch.zeros_like(probs, dtype=torch.bool)
        decided = torch.ones(probs.size(0), dtype=torch.bool)
        if self.uses_top_k:  # below the k-th best; a row without top-k (k = V) cuts nothing
            removed |= probs < torch.where(kth < n, best.gather(-1, kth.clamp(max=n - 1)), 0.0)
            decided &= ((kth < n) | (kth == V - 1))[:, 0]
        if self.uses_top_p:
            mass = best.cumsum(-1)  # (R, n): cumsum adds in order, so these are the whole sort's first n sums
            cut = mass - best > top_p  # mass of strictly better tokens
            cut[:, 0] = False  # the best token always survives (top_p = 0 keeps only it)
            # when the n tokens' mass passes top_p (by more than float32 sums are off) every later token is cut
            rest = (top_p < math.inf).expand(-1, V).clone()  # (R, V)
            removed |= rest.scatter_(-1, order, cut)
            decided &= ((n == V) | (top_p == math.inf) | (mass[:, -1:] > top_p + TOP_P_MARGIN))[:, 0]
        return removed, decided


@dataclass
class Draw:
    """One step's tokens, one per row."""

    tokens: torch.Tensor  # (B,) the drawn tokens
    probs: torch.Tensor  # (B, V) the filtered distributions they were drawn from
    removed: torch.Tensor  # (B, V) bool, the tokens the filters cut
    model_probs: torch.Tensor  # (B,) each drawn token's probability under the model (unfiltered, T=1)


class RowSampler:
    """Draws the next token of every row, each row with its own settings, in a few batched tensor ops. A row draws
    what torch.multinomial(probs, 1, generator) draws alone with a generator seeded with seed: torch's one-sample
    algorithm is argmax(probs / q) with q ~ Exp(1), V numbers filled from the generator. Every row's generator would
    start from the same seed and fill V numbers each step, so every row's q is the same: one generator fills it once
    a step for all rows (one number at a time, ~1.5 ms for 49k). So a row's tokens do not depend on the rows beside
    it (compare() == generate())."""

    def __init__(self, settings: Sequence[SamplingSettings], vocab_size: int, seed: int):
        self.generator = torch.Generator(device="cpu").manual_seed(seed)
        self.noise = torch.ones(vocab_size)  # (V,) q, shared by the rows that draw
        self.rows(list(settings))

    def rows(self, settings: list[SamplingSettings]) -> None:
        """Sample these rows from now on."""
        self.settings, self.filter = settings, RowFilter(settings, self.noise.size(0))
        self.draws = any(s.temperature > 0 for s in settings)  # greedy rows draw nothing

    def __call__(self, logits: torch.Tensor) -> Draw:
        """logits (B, V) -> the Draw of every row."""
        probs, removed = self.filter(logits)
        if not self.draws:
            tokens = probs.argmax(-1)  # (B,)
        else:
            self.noise.exponential_(generator=self.generator)
            tokens = (probs / self.noise).argmax(-1)  # (B,)
            if self.filter.uses_greedy:  # a greedy row's mass is all on its argmax
                tokens = torch.where(self.filter.greedy[:, 0], probs.argmax(-1), tokens)
        # a NaN or inf logit makes its row's softmax NaN throughout, and argmax picks a NaN: checking the drawn
        # tokens' probabilities costs B numbers, not another pass over (B, V) (torch.multinomial would refuse it too)
        if not bool(probs.gather(-1, tokens.unsqueeze(1)).isfinite().all()):
            raise SamplingError("the model's next-token probabilities are not numbers (NaN or infinite): its "
                                "weights are broken, for example by a training run that diverged.")
        model_probs = torch.softmax(logits, -1).gather(-1, tokens.unsqueeze(1)).squeeze(1)  # (B,)
        return Draw(tokens, probs, removed, model_probs)

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Continue with these rows only (indices into the rows of the last call)."""
        self.rows([self.settings[i] for i in rows])


@dataclass
class Step:
    """One generated token."""

    token: int
    prob: float  # its probability in the filtered distribution it was drawn from
    model_prob: float  # its probability under the model's own (unfiltered, T=1) distribution
    logprob: float  # running sum of log model_prob over the generated tokens
    probs: Optional[np.ndarray] = field(repr=False)  # [V] filtered distribution (None: not kept)
    removed: Optional[np.ndarray] = field(repr=False)  # [V] tokens the filters cut (None: not kept)


@torch.inference_mode()
def generate(model, prompt_ids: Sequence[int], max_new_tokens: int, temperature: float = 1.0,
             top_k: Optional[int] = None, top_p: float = 1.0, min_p: float = 0.0,
             seed: Optional[int] = None, stop_token: Optional[int] = None, use_cache: bool = True,
             keep_distributions: bool = True) -> Iterator[Step]:
    """Yield one Step per new token. Same seed, same output. keep_distributions False: Step.probs and .removed
    are None (at a 49k vocabulary they are 245 KB a step, 120 MB for a 500-token list of steps).

    Context past block_size: the model reads a window of the tokens so far (model_core.model.kv_cache
    window_start): the prompt's last block_size tokens at first; when the window would exceed block_size it
    jumps to the newest block_size // 2 tokens and grows again. So past block_size the model sees between
    half a block and a block of context (not always a full block): most steps feed one token to the KV cache
    and one in block_size // 2 + 1 re-encodes half a block. use_cache=False re-runs forward() on the whole
    window every step: the reference the KV cache must match, token for token."""
    s = SamplingSettings(temperature, top_k, top_p, min_p).validate()
    if len(prompt_ids) == 0:
        raise SamplingError("the prompt is empty: type at least one character.")
    sampler = RowSampler([s], model.cfg.vocab_size, seed if seed is not None else torch.seed())
    ids, total = list(prompt_ids), 0.0
    was_training = model.training
    model.eval()
    try:
        next_logits = NextTokenLogits(model, 1, len(prompt_ids), use_cache, max_new_tokens)
        for _ in range(max_new_tokens):
            draw = sampler(next_logits([ids]))
            token, model_prob = int(draw.tokens[0]), float(draw.model_probs[0])
            total += math.log(max(model_prob, 1e-30))
            ids.append(token)
            probs, removed = draw.probs[0], draw.removed[0]  # (V,)
            kept = (probs.numpy(), removed.numpy()) if keep_distributions else (None, None)
            yield Step(token, float(probs[token]), model_prob, total, *kept)
            if stop_token is not None and token == stop_token:
                return
    finally:
        model.train(was_training)


@dataclass
class Completion:
    settings: SamplingSettings
    tokens: list[int]
    mean_logprob: float  # mean log-probability per token under the model (higher = more typical)
    distinct_2: float  # distinct bigrams / bigrams (1 = never repeats a pair)
    repetition_rate: float  # share of 3-grams that already occurred earlier in the output


@torch.inference_mode()
def compare(model, prompt_ids: Sequence[int], settings: Sequence[SamplingSettings], max_new_tokens: int,
            seed: int = 0, stop_token: Optional[int] = None, use_cache: bool = True) -> list[Completion]:
    """Generate once per setting from the same prompt and seed, with quality measures for each. All settings
    advance together, one batched forward pass per token (a classroom's Compare costs a quarter of the CPU
    of one generation per setting); each draws generate()'s random numbers for that seed (RowSampler) and reads
    generate()'s context window, so each draws what generate() would."""
    for s in settings:
        s.validate()
    if len(prompt_ids) == 0:
        raise SamplingError("the prompt is empty: type at least one character.")
    rows = [list(prompt_ids) for _ in settings]  # every row grows by one token per step: same length
    tokens, logprobs = [[] for _ in settings], [0.0 for _ in settings]
    sampler = RowSampler(settings, model.cfg.vocab_size, seed)
    live = list(range(len(settings)))  # settings still generating, in batch-row order
    was_training = model.training
    model.eval()
    try:
        next_logits = NextTokenLogits(model, len(settings), len(prompt_ids), use_cache, max_new_tokens)
        for _ in range(max_new_tokens):
            draw = sampler(next_logits([rows[b] for b in live]))  # one row per live setting
            for b, token, model_prob in zip(live, draw.tokens.tolist(), draw.model_probs.tolist()):
                rows[b].append(token)
                tokens[b].append(token)
                logprobs[b] += math.log(max(model_prob, 1e-30))
            going = [i for i, b in enumerate(live) if stop_token is None or tokens[b][-1] != stop_token]
            if len(going) < len(live):  # a setting that drew the stop token ends; the others go on
                next_logits.keep_rows(going)
                sampler.keep_rows(going)
                live = [live[i] for i in going]
            if not live:
                break
    finally:
        model.train(was_training)
    return [Completion(s, t, lp / len(t) if t else 0.0, distinct_n(t, 2), repetition_rate(t))
            for s, t, lp in zip(settings, tokens, logprobs)]


def distinct_n(tokens: Sequence[int], n: int = 2) -> float:
    """Distinct n-grams over all n-grams; 1.0 for sequences too short to repeat."""
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 1.0


def repetition_rate(tokens: Sequence[int], n: int = 3) -> float:
    """Share of n-grams that already appeared earlier in the same sequence (loops score high)."""
    seen, repeats, grams = set(), 0, [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    for g in grams:
        repeats += g in seen
        seen.add(g)
    return repeats / len(grams) if grams else 0.0
