"""Watch one forward pass of any module: which submodules ran, in what order, on what shapes, and every
attention pattern computed inside, however the code computes it (an explicit softmax over a causal [T, T] score
matrix, one per head or all heads at once, or torch's scaled_dot_product_attention)."""
import math
from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

SOFTMAX = {torch.softmax, F.softmax, torch.Tensor.softmax}
MATMUL = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm, torch.Tensor.bmm}
MASKED_FILL = {torch.masked_fill, torch.Tensor.masked_fill, torch.Tensor.masked_fill_}
DROPOUT = {F.dropout, torch.dropout}
CONTAINERS = (nn.ModuleList, nn.Sequential, nn.ModuleDict)  # hold blocks; never a block themselves


@dataclass
class Call:
    """One submodule's forward during the watched pass."""

    name: str  # its path in the module tree ("" is the root)
    module: nn.Module
    start: int  # ticks of the pass's clock when it began and ended (shared with Attention.tick)
    end: int = -1
    input: Optional[torch.Tensor] = None  # its first tensor argument, detached
    output: Optional[torch.Tensor] = None  # its first tensor result, detached

    @property
    def depth(self) -> int:
        return 0 if not self.name else self.name.count(".") + 1


@dataclass
class Attention:
    """One attention computation: every head's pattern, with the scores and values when the code shows them."""

    tick: int
    within: tuple  # names of the submodules running when it was computed
    pattern: torch.Tensor  # [B, H, T, T], rows sum to 1
    scores: Optional[torch.Tensor] = None  # [B, H, T, T] what the softmax read (-inf where masked)
    unmasked: Optional[torch.Tensor] = None  # [B, H, T, T] the scores before the mask
    z: Optional[torch.Tensor] = None  # [B, H, T, d_head] the pattern-weighted values


@dataclass
class Pass:
    """What one watched forward pass did."""

    calls: list = field(default_factory=list)  # Call, in the order they began
    attention: list = field(default_factory=list)  # Attention, in order
    output: object = None


def first_tensor(value) -> Optional[torch.Tensor]:
    """The first tensor in a module's arguments or result (a tuple, a dict, a Hugging Face output object)."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict) or hasattr(value, "values") and callable(value.values):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            found = first_tensor(item)
            if found is not None:
                return found
    return None


def heads_first(t: torch.Tensor) -> torch.Tensor:
    """[T, x] / [B, T, x] / [B, H, T, x] / [B, ..., T, x] -> [B, H, T, x] (a pattern: x = T; values: x = d_head)."""
    if t.dim() == 2:
        return t[None, None]
    if t.dim() == 3:
        return t[:, None]
    return t.reshape(t.shape[0], -1, *t.shape[-2:])


def is_causal_pattern(p: torch.Tensor, T: int) -> bool:
    """A [.., T, T] softmax output whose rows are spread only over earlier positions."""
    if p.dim() < 2 or tuple(p.shape[-2:]) != (T, T) or not p.is_floating_point():
        return False
    above = torch.triu(torch.ones(T, T, dtype=torch.bool, device=p.device), 1)
    return bool((p.detach()[..., above].abs() <= 1e-6).all())


class Watcher(TorchFunctionMode):
    """The torch function mode that records attention while a pass runs (T: the pass's sequence length)."""

    def __init__(self, T: int, running: list):
        super().__init__()
        self.T, self.running, self.found = T, running, []
        self.clock = [0]
        self._unmasked = {}  # id(masked scores) -> (masked, the scores before masked_fill)
        self._patterns = {}  # id(pattern or its dropout) -> (tensor, Attention) waiting for its values product

    def tick(self) -> int:
        self.clock[0] += 1
        return self.clock[0]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        before = self._before(func, args)
        out = func(*args, **kwargs)
        if func in SOFTMAX:
            self._softmax(args, kwargs, out)
        elif func is F.scaled_dot_product_attention:
            self._sdpa(args, kwargs, out)
        elif func in MATMUL:
            self._values(args, out)
        elif func in DROPOUT and args and id(args[0]) in self._patterns:
            self._patterns[id(out)] = (out, self._patterns[id(args[0])][1])
        elif before is not None:
            self._unmasked[id(out)] = (out, before)
        return out

    def _before(self, func, args):
        """The scores before a masked_fill of a [.., T, T] matrix (copied: masked_fill_ overwrites them)."""
        if func in MASKED_FILL and args and isinstance(args[0], torch.Tensor) and args[0].dim() >= 2 \
                and tuple(args[0].shape[-2:]) == (self.T, self.T):
            return args[0].detach().clone()
        return None

    def _softmax(self, args, kwargs, out):
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        if not isinstance(out, torch.Tensor) or dim not in (-1, out.dim() - 1) or not is_causal_pattern(out, self.T):
            return
        scores = args[0]
        unmasked = self._unmasked.get(id(scores))
        event = Attention(self.tick(), tuple(self.running), heads_first(out.detach().float()),
                          heads_first(scores.detach().float()),
                          heads_first(unmasked[1].float()) if unmasked and unmasked[0] is scores else None)
        self.found.append(event)
        self._patterns[id(out)] = (out, event)

    def _values(self, args, out):
        waiting = self._patterns.get(id(args[0])) if args else None
        if waiting is not None and waiting[0] is args[0] and isinstance(out, torch.Tensor) and out.dim() >= 2 \
                and out.shape[-2] == self.T and waiting[1].z is None:
            waiting[1].z = heads_first(out.detach().float())

    def _sdpa(self, args, kwargs, out):
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
        given = {**dict(zip(names, args)), **kwargs}
        q, k = given["query"].detach().float(), given["key"].detach().float()
        if q.shape[-2] != self.T or k.shape[-2] != self.T:
            return
        if k.dim() >= 3 and k.shape[-3] != q.shape[-3]:  # grouped-query attention: each key head serves several
            k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
        scale = given.get("scale") or 1.0 / math.sqrt(q.shape[-1])
        unmasked = q @ k.transpose(-2, -1) * scale  # [.., T, T]
        scores = unmasked
        if given.get("is_causal"):
            causal = torch.tril(torch.ones(self.T, self.T, dtype=torch.bool, device=q.device))
            scores = scores.masked_fill(~causal, float("-inf"))
        mask = given.get("attn_mask")
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask.float()
        pattern = torch.softmax(scores, dim=-1)
        if not is_causal_pattern(pattern, self.T):
            return
        self.found.append(Attention(self.tick(), tuple(self.running), heads_first(pattern), heads_first(scores),
                                    heads_first(unmasked), heads_first(out.detach().float())))



def watched_pass(module: nn.Module, ids: torch.Tensor, unbatched: bool = False) -> Pass:
    """Run module(ids) once (no gradients), recording every submodule's call and every attention pattern.
    unbatched: the module reads one sequence [T] (as some tutorials write it): it gets ids[0], and what it computes
    is recorded with a batch dimension of 1, as a batched module's would be."""
    record, running = Pass(), []
    batch = (lambda t: t[None] if t is not None else None) if unbatched else (lambda t: t)
    watcher = Watcher(ids.shape[-1], running)
    handles = []

    def begin(name):
        def hook(mod, args, kwargs):
            running.append(name)
            record.calls.append(Call(name, mod, watcher.tick(), input=batch(_detached(first_tensor((args, kwargs))))))
        return hook

    def finish(name):
        def hook(mod, args, kwargs, output):
            call = next(c for c in reversed(record.calls) if c.name == name and c.end < 0)
            call.end, call.output = watcher.tick(), batch(_detached(first_tensor(output)))
            if running and running[-1] == name:
                running.pop()
        return hook

    for name, sub in module.named_modules():
        if name:
            handles.append(sub.register_forward_pre_hook(begin(name), with_kwargs=True))
            handles.append(sub.register_forward_hook(finish(name), with_kwargs=True))
    try:
        with torch.no_grad(), watcher:
            record.output = module(ids[0] if unbatched else ids)
    finally:
        for h in handles:
            h.remove()
    record.attention = watcher.found
    return record


def _detached(t):
    return t.detach() if isinstance(t, torch.Tensor) else None
