"""Purpose-built inputs for the head report card, and the runs of a model on them.

Two probes: windows of validation text (what a head does on real text) and a random token sequence shown
twice (what it does when the text repeats: induction and duplicate-token heads show up there)."""
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from model_core.analysis.roles import HeadRole, head_roles, repeat_scores, text_scores

REPEAT_LENGTH = 32  # tokens in the random segment; the probe shows it twice
REPEAT_BATCH = 8  # random sequences averaged
TEXT_WINDOWS = 16  # windows of validation text averaged
COMMON_SHARE = 0.99  # the repeated probe draws from the tokens making up this share of the validation text
PATTERN_BUDGET = 8_000_000  # attention weights held at once while probing (32 MB of float32)


class ProbeError(ValueError):
    """The model cannot be probed as asked; the message says why."""


@dataclass
class RepeatProbe:
    ids: torch.Tensor  # [B, 2n] long: n random tokens, then the same n again
    length: int  # n
    note: str  # "" or why the probe is shorter than usual


@dataclass
class InductionResult:
    probe: RepeatProbe
    loss: np.ndarray  # [2n] mean loss of predicting each token of the probe (NaN at 0: nothing predicts it)
    pattern: np.ndarray  # [L, H, 2n, 2n] attention averaged over the probe's sequences
    scores: dict  # {"induction" | "duplicate token": [L, H]}

    @property
    def first_copy_loss(self) -> float:
        """Mean loss on tokens 1..n-1: random, so unpredictable (about log(vocab))."""
        return float(np.mean(self.loss[1: self.probe.length]))

    @property
    def second_copy_loss(self) -> float:
        """Mean loss on tokens n+1..2n-1: a model that copies predicts them from the first copy."""
        return float(np.mean(self.loss[self.probe.length + 1:]))


@dataclass
class HeadReport:
    scores: dict  # role name -> [L, H] (roles.text_scores + roles.repeat_scores)
    roles: list  # [HeadRole], layer-major
    induction: InductionResult
    text_source: str  # what the text scores were measured on
    notes: list  # things the student should know (a shortened probe, no validation text)

    def role(self, layer: int, head: int) -> HeadRole:
        return self.roles[layer * np.shape(self.scores["sink"])[1] + head]


def repeat_probe(vocab_size: int, block_size: int, length: int = REPEAT_LENGTH, batch: int = REPEAT_BATCH,
                 seed: int = 0, pool: Optional[torch.Tensor] = None) -> RepeatProbe:
    """Random sequences of `length` distinct tokens (when there are enough) each shown twice, shortened to fit
    the block size. pool: the token ids to draw from (default: the whole vocabulary)."""
    if block_size < 4 or vocab_size < 2:
        raise ProbeError(f"the repeated-sequence probe needs a block size of at least 4 and 2 tokens in the "
                         f"vocabulary; this model has block size {block_size} and {vocab_size} tokens.")
    n, note = length, ""
    if 2 * length > block_size:
        n = block_size // 2
        note = (f"The model's block size ({block_size}) is shorter than the {2 * length}-token repeated probe, so "
                f"the probe was shortened to {n} random tokens shown twice.")
    g = torch.Generator().manual_seed(seed)
    pool = torch.arange(vocab_size) if pool is None else torch.as_tensor(pool, dtype=torch.long)
    if len(pool) >= n:  # distinct tokens: each query has exactly one earlier copy
        first = torch.stack([pool[torch.randperm(len(pool), generator=g)[:n]] for _ in range(batch)])
    else:
        first = pool[torch.randint(len(pool), (batch, n), generator=g)]
    return RepeatProbe(torch.cat([first, first], dim=1), n, note)


def common_tokens(ids: torch.Tensor, share: float = COMMON_SHARE) -> torch.Tensor:
    """The most frequent token ids that together make up `share` of the text: a small model has learned
    these, while rare ones (digits, '&' in Shakespeare) may still have untrained embeddings."""
    counts = torch.bincount(ids.long())
    order = torch.argsort(counts, descending=True)
    covered = torch.cumsum(counts[order], 0) / counts.sum()
    return order[: int((covered < share).sum()) + 1]


def text_windows(val_ids: torch.Tensor, block_size: int, n_windows: int = TEXT_WINDOWS) -> torch.Tensor:
    """n_windows windows of block_size tokens spread evenly over the text. [n, T] long"""
    T = min(block_size, len(val_ids))
    if T < 2:
        raise ProbeError(f"the validation text has {len(val_ids)} tokens: at least 2 are needed.")
    starts = np.linspace(0, len(val_ids) - T, num=n_windows).round().astype(int)
    return torch.stack([val_ids[s: s + T].long() for s in np.unique(starts)])


@torch.inference_mode()
def patterns_and_logits(model, ids: torch.Tensor) -> tuple[np.ndarray, torch.Tensor]:
    """Attention of every head on a batch, in chunks that keep memory bounded. -> ([L, H, B, T, T], logits)"""
    cfg = model.cfg
    B, T = ids.shape
    chunk = max(1, min(B, PATTERN_BUDGET // (cfg.n_layers * cfg.n_heads * T * T)))
    patterns, logits = [], []
    for start in range(0, B, chunk):
        out, cache = model.run_with_cache(ids[start: start + chunk], names_filter=lambda n: n.endswith("hook_pattern"))
        patterns.append(cache.stack("pattern").float().numpy())  # [L, b, H, T, T]
        logits.append(out.float().cpu())
    return np.concatenate(patterns, axis=1).transpose(0, 2, 1, 3, 4), torch.cat(logits)


def induction_probe(model, probe: Optional[RepeatProbe] = None) -> InductionResult:
    """Run the repeated-sequence probe: per-token loss on both copies, mean attention, induction scores."""
    probe = probe or repeat_probe(model.cfg.vocab_size, model.cfg.block_size)
    pattern, logits = patterns_and_logits(model, probe.ids)
    ids = probe.ids.cpu()
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")  # [B, 2n-1]
    loss = np.concatenate([[np.nan], losses.mean(0).numpy()])
    scores = repeat_scores(pattern, ids.numpy())
    return InductionResult(probe, loss, pattern.mean(2), scores)


def head_report(model, val_ids: Optional[torch.Tensor] = None, text_source: str = "the validation text",
                seed: int = 0, window: Optional[int] = None) -> HeadReport:
    """Role scores and labels for every head. Without validation text the text scores are measured on the
    repeated probe instead, and the report says so. window: text windows' length (default block_size; a large
    model's attention maps over 512 tokens would be gigabytes)."""
    was_training = model.training
    model.eval()
    try:
        has_text = val_ids is not None and len(val_ids) >= 2
        pool = common_tokens(val_ids) if has_text else None
        induction = induction_probe(model, repeat_probe(model.cfg.vocab_size, model.cfg.block_size, seed=seed,
                                                        pool=pool))
        notes = [induction.probe.note] if induction.probe.note else []
        if has_text:
            pattern, _ = patterns_and_logits(model, text_windows(val_ids, window or model.cfg.block_size))
        else:
            pattern, _ = patterns_and_logits(model, induction.probe.ids)
            text_source = "the repeated random probe (no validation text was available)"
            notes.append("No validation text is known for this model, so the text scores come from random tokens.")
    finally:
        model.train(was_training)
    scores = {**text_scores(pattern), **induction.scores}
    return HeadReport(scores, head_roles(scores), induction, text_source, notes)
