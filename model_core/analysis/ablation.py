"""Ablation: knock out heads, attention layers, MLP layers or single FFN neurons and measure what changes.

An ablation replaces an activation with zero or with its mean over a fixed set of validation windows. Mean
ablation is the honest default: zero is a value the next layer never saw in training (a LayerNorm input
shifted far from its usual mean), so zeroing measures "how badly does the model break" as much as "what
did this unit contribute"; the mean removes what the unit says about *this* input and keeps its average.

Hooks are attached per call (model.hooks), never left on the model. Several ablations run in one batch:
ablation i owns batch rows [i*W, (i+1)*W), and each hook edits only its own rows."""
import functools
import json
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from model_core.analysis.interruptible import between_batches
from model_core.data.corpora import load_corpus
from model_core.data.dataset import compact, token_tensor, train_val_split
from model_core.data.tokenization import tokenizer_from_dict
from model_core.model.sampling import generate

ABLATION_MODES = ("mean", "zero")
EVAL_WINDOWS = 32  # validation windows in the fixed evaluation set (32 x 64 characters for the shipped model)
EVAL_SEED = 1234  # the evaluation set is the same windows every time
TOKENS_PER_PASS = 12_288  # importance map: ablations per forward pass x windows x positions at most (bounds memory:
# the shipped model's 5 ablations of a layer, 10,240 tokens, share one pass with ~25 MB per MLP activation)


class AblationError(ValueError):
    """An ablation that does not fit the model; the message says what to change."""


@dataclass(frozen=True)
class Ablation:
    """What to knock out. Layers, heads and neurons count from 0."""

    heads: tuple = ()  # (layer, head) pairs: the head's output hook_z
    attn_layers: tuple = ()  # layers whose whole attention output (hook_attn_out) is knocked out
    mlp_layers: tuple = ()  # layers whose whole MLP output (hook_mlp_out) is knocked out
    neurons: tuple = ()  # (layer, neuron) pairs: one FFN activation (mlp.hook_post)

    def is_empty(self) -> bool:
        return not (self.heads or self.attn_layers or self.mlp_layers or self.neurons)

    def validate(self, cfg) -> "Ablation":
        """self, or AblationError naming the first unit that does not exist in a model with config cfg."""
        for layer in (*[h[0] for h in self.heads], *self.attn_layers, *self.mlp_layers, *[n[0] for n in self.neurons]):
            if not 0 <= layer < cfg.n_layers:
                raise AblationError(f"layer {layer} does not exist: this model has layers 0 to {cfg.n_layers - 1}.")
        for layer, head in self.heads:
            if not 0 <= head < cfg.n_heads:
                raise AblationError(f"head L{layer}·H{head} does not exist: each layer has heads 0 to "
                                    f"{cfg.n_heads - 1}.")
        if cfg.attn_only and (self.mlp_layers or self.neurons):
            raise AblationError("this model is attention-only: it has no FFN layers or FFN neurons to knock out; "
                                "ablate heads or attention layers instead.")
        for layer, neuron in self.neurons:
            if not 0 <= neuron < cfg.d_mlp:
                raise AblationError(f"neuron {layer}.{neuron} does not exist: each FFN has neurons 0 to "
                                    f"{cfg.d_mlp - 1}.")
        return self

    def describe(self) -> str:
        """'head L1·H3, FFN layer 2' (the app's words) in the order heads, attention layers, MLP layers, neurons."""
        parts = [f"head L{layer}·H{head}" for layer, head in self.heads]
        parts += [f"attention layer {layer}" for layer in self.attn_layers]
        parts += [f"FFN layer {layer}" for layer in self.mlp_layers]
        parts += [f"neuron {layer}.{n}" for layer, n in self.neurons]
        return ", ".join(parts) if parts else "nothing"

    def edits(self) -> dict[str, list[tuple]]:
        """{hook name: [index into the dims after (batch, pos), ...]}; () means the whole activation."""
        out: dict[str, list[tuple]] = {}
        for layer, head in self.heads:
            out.setdefault(f"blocks.{layer}.attn.hook_z", []).append((head,))
        for layer in self.attn_layers:
            out.setdefault(f"blocks.{layer}.hook_attn_out", []).append(())
        for layer in self.mlp_layers:
            out.setdefault(f"blocks.{layer}.hook_mlp_out", []).append(())
        for layer, neuron in self.neurons:
            out.setdefault(f"blocks.{layer}.mlp.hook_post", []).append((neuron,))
        return out


def ablatable_hooks(cfg) -> list[str]:
    """Every hook point an Ablation may edit, for the means."""
    names = []
    for layer in range(cfg.n_layers):
        names += [f"blocks.{layer}.attn.hook_z", f"blocks.{layer}.hook_attn_out"]
        if not cfg.attn_only:
            names += [f"blocks.{layer}.hook_mlp_out", f"blocks.{layer}.mlp.hook_post"]
    return names


# ---------------------------------------------------------------- the fixed evaluation set

def eval_windows(data: torch.Tensor, block_size: int, n_windows: int = EVAL_WINDOWS,
                 seed: int = EVAL_SEED) -> torch.Tensor:
    """[n, T + 1] int64 windows at seeded offsets of data (T = block_size, or less for a short text): the
    same windows for the same data every time."""
    if len(data) < 2:
        raise AblationError("the validation text is shorter than two tokens: prepare a longer text on the Data tab.")
    T = min(block_size, len(data) - 1)
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(len(data) - T, (n_windows,), generator=gen)
    return torch.stack([data[s:s + T + 1] for s in starts.tolist()]).long()


def corpus_validation_ids(corpus: str, tokenizer) -> torch.Tensor:
    """Token ids of the validation split (the last 10%, as training uses) of a built-in corpus, encoded with
    the model's tokenizer; characters it does not know are dropped. Cached: encoding a corpus takes a while."""
    return _corpus_validation_ids(corpus, json.dumps(tokenizer.to_dict(), sort_keys=True))


@functools.lru_cache(maxsize=4)
def _corpus_validation_ids(corpus: str, tokenizer_json: str) -> torch.Tensor:
    tokenizer = tokenizer_from_dict(json.loads(tokenizer_json))
    text = tokenizer.strip_unknown(load_corpus(corpus))
    _, val = train_val_split(token_tensor(tokenizer.encode(text)))
    return compact(val, tokenizer.vocab_size)


@torch.inference_mode()
def component_means(model, windows: torch.Tensor) -> dict[str, torch.Tensor]:
    """{hook name: mean activation over every window and position}, shape = the activation's dims after
    (batch, pos): [head, d_head] for hook_z, [d_model] for layer outputs, [d_mlp] for neurons."""
    _, cache = model.run_with_cache(windows[:, :-1], names_filter=ablatable_hooks(model.cfg))
    return {name: cache[name].mean(dim=(0, 1)) for name in ablatable_hooks(model.cfg)}


# ---------------------------------------------------------------- hooks

def ablation_hooks(ablations: Sequence[Ablation], rows: Optional[int], means: Optional[dict]) -> list[tuple]:
    """fwd_hooks for run_with_hooks: ablation i edits batch rows [i*rows, (i+1)*rows) (all rows when rows is
    None, for a single ablation). means None: zero ablation."""
    by_hook: dict[str, list[tuple]] = {}
    for i, ablation in enumerate(ablations):
        batch_rows = slice(None) if rows is None else slice(i * rows, (i + 1) * rows)
        for name, indices in ablation.edits().items():
            by_hook.setdefault(name, []).extend((batch_rows, index) for index in indices)
    return [(name, _replacing_hook(edits, None if means is None else means[name])) for name, edits in by_hook.items()]


def _replacing_hook(edits: list[tuple], mean: Optional[torch.Tensor]):
    """A hook that sets activation[rows, :, *index] to 0 or to mean[index], for each (rows, index)."""
    def hook(x, _hook_point):
        x = x.clone()  # the activation may be a view of another tensor (hook_z is a transpose)
        for rows, index in edits:
            x[(rows, slice(None), *index)] = 0.0 if mean is None else mean[index].to(x.dtype)
        return x
    return hook


def mode_means(model, mode: str, windows: Optional[torch.Tensor], means: Optional[dict] = None) -> Optional[dict]:
    """The means a mode needs: None for zero ablation, else means (computed from windows if not given)."""
    if mode not in ABLATION_MODES:
        raise AblationError(f"ablation mode must be one of {', '.join(ABLATION_MODES)}, got {mode!r}.")
    if mode == "zero":
        return None
    return means if means is not None else component_means(model, windows)


# ---------------------------------------------------------------- running ablated

def token_losses(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """logits [B, T, V], targets [B, T] -> cross-entropy (nats) of each target [B, T]."""
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), reduction="none").view(targets.shape)


@torch.inference_mode()
def ablated_logits(model, idx: torch.Tensor, ablation: Ablation, means: Optional[dict]) -> torch.Tensor:
    """Logits [B, T, V] of idx [B, T] with the ablation applied (the clean logits if it is empty)."""
    logits, _ = model.run_with_hooks(idx, fwd_hooks=ablation_hooks([ablation], None, means))
    return logits


@torch.inference_mode()
def validation_loss(model, windows: torch.Tensor, ablation: Ablation = Ablation(),
                    means: Optional[dict] = None) -> float:
    """Mean loss (nats per token) over the evaluation windows [n, T + 1], with the ablation applied."""
    logits = ablated_logits(model, windows[:, :-1], ablation, means)
    return float(token_losses(logits, windows[:, 1:]).mean())


@dataclass
class ImportanceMap:
    """Increase in validation loss when each head (and each MLP layer) is knocked out alone."""

    base_loss: float  # nats per token, nothing ablated
    head_increase: np.ndarray  # [layer, head]
    mlp_increase: Optional[np.ndarray]  # [layer]; None for an attention-only model
    mode: str
    estimated: bool = False  # first-order estimates (model_core.analysis.attribution_patching), not real ablations

    def top_head(self) -> tuple[int, int]:
        layer, head = np.unravel_index(int(np.argmax(self.head_increase)), self.head_increase.shape)
        return int(layer), int(head)


@torch.inference_mode()
def importance_map(model, windows: torch.Tensor, mode: str = "mean", means: Optional[dict] = None,
                   tokens_per_pass: int = TOKENS_PER_PASS) -> ImportanceMap:
    """Every head, then every MLP layer, ablated alone; batched: each ablation owns len(windows) batch rows."""
    cfg = model.cfg
    means = mode_means(model, mode, windows, means)
    ablations = [Ablation(heads=((layer, head),)) for layer in range(cfg.n_layers) for head in range(cfg.n_heads)]
    if not cfg.attn_only:
        ablations += [Ablation(mlp_layers=(layer,)) for layer in range(cfg.n_layers)]
    base, losses = ablation_losses(model, windows, ablations, means, tokens_per_pass)
    increase = losses - base
    n_heads = cfg.n_layers * cfg.n_heads
    mlp = None if cfg.attn_only else increase[n_heads:]
    return ImportanceMap(base, increase[:n_heads].reshape(cfg.n_layers, cfg.n_heads), mlp, mode)


def first_layer(ablation: Ablation) -> int:
    """The earliest layer the ablation edits: everything before it is the same as the clean run."""
    return min([h[0] for h in ablation.heads] + list(ablation.attn_layers) + list(ablation.mlp_layers)
               + [n[0] for n in ablation.neurons])


def logits_from_layer(model, layer: int, resid: torch.Tensor) -> torch.Tensor:
    """Logits [B, T, V] from the residual stream entering block `layer` [B, T, D]: the tail of GPT.forward
    (tests check that this equals the full forward pass)."""
    for block in model.blocks[layer:]:
        resid = block(resid)  # (B, T, D)
    return model.unembed(model.ln_final(resid))  # (B, T, V)


@torch.inference_mode()
def ablation_losses(model, windows: torch.Tensor, ablations: list[Ablation], means: Optional[dict],
                    tokens_per_pass: int = TOKENS_PER_PASS) -> tuple[float, np.ndarray]:
    """(clean validation loss, loss with each ablation alone [len(ablations)]). Several ablations share one
    forward pass, which starts at their first edited layer from the clean run's residual stream there."""
    n, T = windows.shape[0], windows.shape[1] - 1
    x, y = windows[:, :-1], windows[:, 1:]
    names = [f"blocks.{layer}.hook_resid_pre" for layer in range(model.cfg.n_layers)]
    logits, cache = model.run_with_cache(x, names_filter=names)
    base = float(token_losses(logits, y).mean())
    per_pass = max(1, tokens_per_pass // (n * T))
    losses = np.zeros(len(ablations))
    for layer in range(model.cfg.n_layers):
        group = [i for i, a in enumerate(ablations) if first_layer(a) == layer]
        for start in range(0, len(group), per_pass):
            between_batches()
            chunk = group[start:start + per_pass]
            k = len(chunk)
            with model.hooks(ablation_hooks([ablations[i] for i in chunk], n, means)):
                logits = logits_from_layer(model, layer, cache[names[layer]].repeat(k, 1, 1))  # (k*n, T, V)
            losses[chunk] = token_losses(logits, y.repeat(k, 1)).view(k, n * T).mean(dim=1).numpy()
    return base, losses


def ablated_generation(model, prompt_ids: Sequence[int], ablation: Ablation, means: Optional[dict],
                       max_new_tokens: int, settings, seed: int) -> list:
    """model_core.model.sampling.generate's Steps with the ablation hooked in for the whole generation (same seed
    and settings give the same text as an unablated run when the ablation is empty)."""
    steps = []
    with model.hooks(ablation_hooks([ablation], None, means)):
        for step in generate(model, prompt_ids, max_new_tokens, settings.temperature, settings.top_k,
                             settings.top_p, settings.min_p, seed=seed):
            steps.append(step)
            between_batches()  # a token at a time; the hooks come off if it stops the generation
    return steps
