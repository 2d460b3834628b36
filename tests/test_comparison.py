"""Comparing two models on one text: bits per character, fair across char and BPE tokenizers."""
import math

import numpy as np
import pytest
import torch

from model_core.analysis.comparison import bits_per_character, character_bits, chars_per_token, prompt_token_losses
from model_core.data.tokenization import build_tokenizer

from .helpers import tiny_model


def test_bits_per_character_of_a_char_model_equals_its_loss_over_ln_2():
    text = "hello there, general kenobi"
    tok = build_tokenizer("char", text)
    model = tiny_model(vocab_size=tok.vocab_size, block_size=32)
    ids = tok.encode(text)
    nats = prompt_token_losses(model, ids)
    _, loss = model(torch.tensor([ids[:-1]]), torch.tensor([ids[1:]]))
    chars = chars_per_token(tok, ids)[1:]
    assert list(chars) == [1] * (len(ids) - 1)
    assert bits_per_character(nats, chars) == pytest.approx(float(loss.detach()) / math.log(2), rel=1e-6)
    assert character_bits(nats, chars) == pytest.approx(nats / math.log(2))


def test_bits_per_character_of_a_bpe_model_divides_by_the_characters_covered():
    tok = build_tokenizer("bpe", "the cat sat on the mat. " * 50 + "é", vocab_size=300)
    ids = tok.encode("the cat é the mat")
    chars = chars_per_token(tok, ids)
    assert chars.sum() == len("the cat é the mat") and len(ids) < chars.sum()
    nats = np.linspace(0.5, 2.0, len(ids))
    assert bits_per_character(nats, chars) == pytest.approx(nats.sum() / math.log(2) / chars.sum())
    assert character_bits(nats, chars).sum() == pytest.approx(nats.sum() / math.log(2))
