"""The in-context-learning score of the progress measures on short contexts, and its caption: seed 004's 10-token
context gave "+nan nats" and no line (its late window was empty)."""
import math

import numpy as np
import torch
import torch.nn.functional as F

from explorer.teaching.captions_progress import progress_caption
from model_core.analysis.progress import icl_score


def per_position_loss(logits, windows) -> torch.Tensor:
    loss = F.cross_entropy(logits[:, :-1].transpose(1, 2), windows[:, 1:], reduction="none")
    return loss.mean(0)


def test_a_ten_token_context_scores_its_last_position_against_its_second():
    g = torch.Generator().manual_seed(0)
    logits, windows = torch.randn(3, 10, 7, generator=g), torch.randint(0, 7, (3, 10), generator=g)
    loss = per_position_loss(logits, windows)
    assert math.isclose(icl_score(logits, windows), float(loss[8] - loss[1]), rel_tol=1e-5, abs_tol=1e-6)


def test_a_long_context_scores_its_last_tenth_against_positions_5_to_15_percent():
    g = torch.Generator().manual_seed(1)
    logits, windows = torch.randn(2, 100, 5, generator=g), torch.randint(0, 5, (2, 100), generator=g)
    loss = per_position_loss(logits, windows)
    assert math.isclose(icl_score(logits, windows), float(loss[90:99].mean() - loss[6:15].mean()), rel_tol=1e-5,
                        abs_tol=1e-6)


def test_a_context_too_short_has_no_score():
    assert icl_score(torch.zeros(1, 9, 4), torch.zeros(1, 9, dtype=torch.long)) is None


def test_the_caption_leaves_out_a_score_that_is_not_a_number():
    caption = progress_caption([0, 200], {"induction": [0.1, 0.2], "icl": [np.nan, np.nan]}, 1000)
    assert "nan" not in caption.lower() and "in-context" not in caption and "induction score is 0.20" in caption
