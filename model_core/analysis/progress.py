"""Progress measures: a few numbers per evaluation that show a circuit forming while the loss alone hides it.

A language model (token-stream data):
  induction      the strongest head's induction score on a random sequence shown twice (Olsson et al. 2022)
  prev_token     the strongest head's previous-token score on windows of the validation text
  k_composition  the strongest K-composition between a head and a head of a later layer (circuits.py)
  icl            in-context-learning score: loss late in the context minus loss early in it (negative when
                 the model uses the context; Olsson et al. use token 500 minus token 50, here the mean loss
                 over the last 10 % of the positions minus the mean over positions 5 %-15 % of the block)
An algorithmic task (example data, model_core.data.tasks):
  train_acc, val_acc  share of the training / test examples whose every answer token is the likeliest one
and for modular addition:
  restricted_loss, excluded_loss  Nanda et al.'s losses (fourier.phase_losses) with the key frequencies of the
                 number embedding at this step, the Grokking tab's (Nanda et al. take the final model's; this
                 needs no hindsight, and at the end it is the lab's own)
  key_share      share of the number embedding's squared Fourier norm carried by its 6 largest frequencies"""
import math
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from model_core.analysis.circuits import composition_scores
from model_core.analysis.fourier import all_pair_run, embedding_norms, key_frequencies, phase_losses, top_share
from model_core.analysis.heads import head_statistics
from model_core.analysis.probes import ProbeError, common_tokens, induction_probe, repeat_probe, text_windows

LANGUAGE_KEYS = ("induction", "prev_token", "k_composition", "icl")
TASK_KEYS = ("train_acc", "val_acc")
MODULAR_KEYS = ("restricted_loss", "excluded_loss", "key_share")
PROBE_SEQUENCES = 4  # small: measured at every evaluation
# Text windows per evaluation: about TEXT_TOKENS tokens, 8 to 64 windows. The ICL score compares a few positions
# per window: on 8 windows of a 32-token block it moved by ±0.2 nats between evaluations 25 steps apart on the
# loss plateau.
TEXT_TOKENS, TEXT_WINDOWS = 2048, (8, 64)
EVAL_CHUNK = 4096  # examples per forward pass when scoring a task
KEY_COUNT = 6  # frequencies in key_share


@torch.inference_mode()
def progress_measures(model, train_data: torch.Tensor, val_data: Optional[torch.Tensor],
                      task: Optional[dict] = None) -> dict:
    """The measures that fit the data (see the module docstring), as {name: float}; the caller puts the model in
    eval mode. Measures that cannot be taken (a block too short for the probe) are left out."""
    if train_data.dim() == 3:
        out = {"train_acc": example_accuracy(model, train_data)}
        if val_data is not None:
            out["val_acc"] = example_accuracy(model, val_data)
        if task and task.get("name") == "modular-addition":
            out.update(modular_measures(model, task))
        return out
    return language_measures(model, val_data if val_data is not None else train_data)


def language_measures(model, ids: torch.Tensor) -> dict:
    cfg = model.cfg
    out = {}
    try:
        probe = repeat_probe(cfg.vocab_size, cfg.block_size, length=min(32, cfg.block_size // 2),
                             batch=PROBE_SEQUENCES, pool=common_tokens(ids[:200_000]))
        out["induction"] = float(induction_probe(model, probe).scores["induction"].max())
    except ProbeError:
        pass
    n_windows = min(max(TEXT_TOKENS // cfg.block_size, TEXT_WINDOWS[0]), TEXT_WINDOWS[1])
    windows = text_windows(ids, cfg.block_size, n_windows).to(next(model.parameters()).device)
    logits, cache = model.run_with_cache(windows, names_filter=lambda n: n.endswith("hook_pattern"))
    pattern = cache.stack("pattern").float().mean(1).numpy()  # [L, H, T, T] averaged over windows
    out["prev_token"] = float(head_statistics(pattern)["prev_token"].max())
    out["k_composition"] = float(composition_scores(model)["k"].max()) if cfg.n_layers > 1 else 0.0
    icl = icl_score(logits, windows)
    if icl is not None:
        out["icl"] = icl
    return out


def icl_score(logits: torch.Tensor, windows: torch.Tensor) -> Optional[float]:
    """Mean loss over the last 10 % of positions (at least the last) minus the mean over positions 5 %-15 % (None
    when the window is too short to have both apart). logits [B, T, V], windows [B, T]."""
    T = windows.shape[1]
    early = slice(int(0.05 * T) + 1, max(int(0.15 * T), int(0.05 * T) + 2))
    late = slice(min(int(0.9 * T), T - 2), T - 1)  # a 10-token context: position 8 (of the 9 that have a target)
    if T < 10 or late.start <= early.stop:
        return None
    loss = F.cross_entropy(logits[:, :-1].float().transpose(1, 2), windows[:, 1:].long(), reduction="none")  # [B, T-1]
    per_position = loss.mean(0)
    score = float(per_position[late].mean() - per_position[early].mean())
    return score if math.isfinite(score) else None


def example_accuracy(model, examples: torch.Tensor) -> float:
    """Share of examples [N, 2, T] whose every scored target is the model's likeliest token."""
    device = next(model.parameters()).device
    right = 0
    for start in range(0, len(examples), EVAL_CHUNK):
        chunk = examples[start: start + EVAL_CHUNK].to(device)
        x, y = chunk[:, 0].long(), chunk[:, 1].long()
        guess = model(x)[0].argmax(-1)  # (n, T)
        right += int(((guess == y) | (y < 0)).all(1).sum())
    return right / len(examples)


def modular_measures(model, task: dict) -> dict:
    from model_core.data.tasks.registry import make_task  # the data layer: tasks are data

    t = make_task(task)
    logits, _ = all_pair_run(model, t.p)
    norms = embedding_norms(model, t.p)
    losses = phase_losses(logits, t.p, t.train_mask(), key_frequencies(norms))
    return {"restricted_loss": losses.restricted, "excluded_loss": losses.excluded,
            "key_share": top_share(norms, KEY_COUNT)}


def strongest(values: np.ndarray) -> tuple[float, tuple]:
    """(largest value, its index) of an array."""
    index = np.unravel_index(int(np.argmax(values)), values.shape)
    return float(values[index]), tuple(int(i) for i in index)
