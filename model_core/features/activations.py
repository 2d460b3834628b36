"""Activations at one hook point, read from a corpus in bounded batches into a shuffled buffer.

An SAE reads one activation per token position: the residual stream before or after a block, the attention
or MLP output, or the MLP's hidden layer. The forward pass stops at the hook (later blocks would be wasted
work): collecting 512k activations of block 2 of the 4-block classroom model costs ~3/4 of full passes."""
from typing import Callable, Optional

import torch

# hook-name endings an SAE may read: [batch, pos, width] activations (attention patterns and per-head
# tensors have more dims)
SITES = {"hook_resid_pre": "residual stream entering the block", "hook_resid_mid": "residual stream between "
         "attention and FFN", "hook_resid_post": "residual stream after the block",
         "hook_attn_out": "attention output", "hook_mlp_out": "FFN output", "mlp.hook_post": "FFN hidden layer "
         "(the FFN neurons)"}
BATCH_TOKENS = 16_384  # tokens per forward pass while collecting (bounds the memory of one pass)


class HookError(ValueError):
    """A hook name an SAE cannot read; the message lists the ones it can."""


def sae_hook_names(cfg) -> list[str]:
    """Every hook point of a model with config cfg that an SAE can be trained on, block by block."""
    names = []
    for layer in range(cfg.n_layers):
        names += [f"blocks.{layer}.hook_resid_pre", f"blocks.{layer}.hook_attn_out", f"blocks.{layer}.hook_resid_mid"]
        if not cfg.attn_only:
            names += [f"blocks.{layer}.hook_mlp_out", f"blocks.{layer}.mlp.hook_post"]
        names.append(f"blocks.{layer}.hook_resid_post")
    return names


def check_hook(cfg, hook_name: str) -> int:
    """The activation width at hook_name (d_model or d_mlp); HookError if an SAE cannot read it."""
    names = sae_hook_names(cfg)
    if hook_name not in names:
        raise HookError(f"{hook_name!r} is not a hook point an SAE can read in this model: use "
                        f"blocks.L.hook_resid_pre / hook_resid_mid / hook_resid_post / hook_attn_out"
                        + ("" if cfg.attn_only else " / hook_mlp_out / mlp.hook_post")
                        + f" with L from 0 to {cfg.n_layers - 1}.")
    return cfg.d_mlp if hook_name.endswith("mlp.hook_post") else cfg.d_model


def hook_layer(hook_name: str) -> int:
    """'blocks.2.hook_resid_post' -> 2."""
    return int(hook_name.split(".")[1])


class _Reached(Exception):
    """Raised by the capturing hook to end the forward pass once the activation is read."""


@torch.inference_mode()
def activations_at(model, idx: torch.Tensor, hook_name: str) -> torch.Tensor:
    """idx [B, T] token ids -> the activation at hook_name [B, T, width], without the blocks after it."""
    return activations_at_hooks(model, idx, [hook_name])[hook_name]


@torch.inference_mode()
def activations_at_hooks(model, idx: torch.Tensor, hook_names: list[str]) -> dict[str, torch.Tensor]:
    """idx [B, T] -> {hook name: float32 activation}; the pass stops once the last of them is read."""
    captured = {}

    def capture(x, hook):
        captured[hook.name] = x.detach().float()
        if len(captured) == len(set(hook_names)):
            raise _Reached

    try:
        with model.hooks([(name, capture) for name in set(hook_names)]):
            model(idx)
    except _Reached:
        pass
    return captured


def windows_of(ids: torch.Tensor, window: int) -> torch.Tensor:
    """A 1-D token split -> [n, window] consecutive windows (a last partial window is dropped)."""
    n = len(ids) // window
    if n == 0:
        raise ValueError(f"the text has {len(ids)} tokens: at least one window of {window} is needed.")
    return ids[: n * window].view(n, window).long()


def collect_activations(model, ids: torch.Tensor, hook_name: str, n_tokens: int, window: int,
                        seed: int = 0, batch_tokens: int = BATCH_TOKENS,
                        progress: Optional[Callable[[int], None]] = None,
                        before_batch: Optional[Callable[[], bool]] = None) -> torch.Tensor:
    """n_tokens activations [n_tokens, width] at hook_name from random windows of ids (a 1-D token split), in
    window order (the trainer draws its batches in a random order of all of them: the shuffled buffer). Windows
    are drawn without replacement while the text lasts (then again, in a new order). progress(tokens so far) after each batch; before_batch() -> False stops early
    (the activations so far are returned)."""
    check_hook(model.cfg, hook_name)
    windows = windows_of(ids, window)
    gen = torch.Generator().manual_seed(seed)
    needed = -(-n_tokens // window)  # windows
    order = torch.cat([torch.randperm(len(windows), generator=gen)
                       for _ in range(-(-needed // len(windows)))])[:needed]
    per_pass = max(1, batch_tokens // window)
    width = check_hook(model.cfg, hook_name)
    out = torch.empty(needed * window, width)
    filled = 0
    for start in range(0, needed, per_pass):
        if before_batch is not None and before_batch() is False:
            break
        batch = windows[order[start:start + per_pass]]
        acts = activations_at(model, batch, hook_name).reshape(-1, width)
        out[filled:filled + len(acts)] = acts
        filled += len(acts)
        if progress is not None:
            progress(min(filled, n_tokens))
    return out[:min(filled, n_tokens)]
