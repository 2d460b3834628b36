"""Compare two models on the same text, fairly even when their tokenizers differ: bits per character.

A char model predicts one character per step; a BPE model predicts several at once, so its loss per token
is larger for the same skill. Dividing the total surprise (in bits) by the characters it covered puts both
on one scale: bits per character."""
import math
from typing import Sequence

import numpy as np
import torch

from model_core.analysis.ablation import token_losses


@torch.inference_mode()
def prompt_token_losses(model, ids: Sequence[int]) -> np.ndarray:
    """Loss (nats) of each token after the first [T-1]: the model reads ids[:t] and predicts ids[t]."""
    idx = torch.tensor([list(ids)])
    logits, _ = model(idx)
    return token_losses(logits[:, :-1], idx[:, 1:])[0].double().numpy()


def chars_per_token(tokenizer, ids: Sequence[int]) -> np.ndarray:
    """How many characters of the decoded text each token adds [T] (0 for a byte that only completes a
    character together with the next token). Cumulative decoding, so split multi-byte characters count once."""
    lengths = [len(tokenizer.decode(list(ids[:i + 1]))) for i in range(len(ids))]
    return np.diff([0] + lengths).clip(min=0)


def bits_per_character(token_nats, chars: Sequence[int]) -> float:
    """Total surprise in bits over the characters the predicted tokens cover (token_nats [n], chars [n])."""
    n_chars = float(np.sum(chars))
    if n_chars <= 0:
        raise ValueError("there is no character to score: use a longer text.")
    return float(np.sum(token_nats)) / math.log(2) / n_chars


def character_bits(token_nats, chars: Sequence[int]) -> np.ndarray:
    """Bits per character spread evenly over the characters of each predicted token [sum(chars)]: a per-
    character curve two tokenizers share. A token that adds no character passes its bits to the next."""
    out, carry = [], 0.0
    for nats, n in zip(np.asarray(token_nats, dtype=np.float64), chars):
        bits = nats / math.log(2) + carry
        if n == 0:
            carry = bits
            continue
        out.extend([bits / n] * int(n))
        carry = 0.0
    return np.asarray(out)


@torch.inference_mode()
def attention_patterns(model, ids: Sequence[int]) -> np.ndarray:
    """Every head's attention pattern on ids [L, H, T, T]."""
    _, cache = model.run_with_cache(torch.tensor([list(ids)]), names_filter=lambda n: n.endswith("hook_pattern"))
    return cache.stack("pattern")[:, 0].float().numpy()


def pattern_differences(patterns_a, patterns_b) -> np.ndarray:
    """Mean absolute difference of two models' attention weights per head [L, H], over the causal entries
    (query >= key) only: the masked future keys are 0 in both and would only dilute the difference."""
    a, b = np.asarray(patterns_a, dtype=np.float64), np.asarray(patterns_b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"the patterns differ in shape: {a.shape} vs {b.shape}")
    causal = np.tril(np.ones(a.shape[-2:], dtype=bool))
    return np.abs(a - b)[..., causal].mean(axis=-1)
