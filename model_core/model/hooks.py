"""Hook points: identity modules whose names come from the module tree (TransformerLens style)."""
from contextlib import contextmanager
from typing import Callable, Iterable, Optional, Union

import torch
import torch.nn as nn

# A hook receives (activation, hook_point) and may return a replacement tensor.
HookFn = Callable[[torch.Tensor, "HookPoint"], Optional[torch.Tensor]]
NamesFilter = Union[None, str, Iterable[str], Callable[[str], bool]]


class HookHandle:
    """Returned by HookPoint.add_hook; remove() detaches the hook."""

    def __init__(self, hook_point: "HookPoint", fn: HookFn):
        self.hook_point, self.fn = hook_point, fn

    def remove(self) -> None:
        if self.fn in self.hook_point.fns:
            self.hook_point.fns.remove(self.fn)


class HookPoint(nn.Module):
    """Returns its input; the place where a hook can read or replace an activation.

    Hooks live in a plain list rather than torch's forward-hook dicts, and an idle hook point skips
    nn.Module's call machinery: it costs an empty-list check (a generation step passes ~55 of them)."""

    def __init__(self):
        super().__init__()
        self.name: Optional[str] = None  # set by HookedModule.setup_hooks()
        self.fns: list[HookFn] = []

    def has_hooks(self) -> bool:
        return bool(self.fns)

    def add_hook(self, fn: HookFn) -> HookHandle:
        """Attach fn(activation, hook) -> new activation or None."""
        self.fns.append(fn)
        return HookHandle(self, fn)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        # torch's own forward hooks, if anyone registers them, still run through nn.Module.__call__
        return super().__call__(x) if self.fns or self._forward_hooks or self._forward_pre_hooks else x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for fn in self.fns:
            out = fn(x, self)
            if out is not None:
                x = out
        return x


def names_predicate(names_filter: NamesFilter) -> Callable[[str], bool]:
    """Turn None / a name / a list of names / a predicate into a predicate."""
    if names_filter is None:
        return lambda name: True
    if isinstance(names_filter, str):
        return lambda name: name == names_filter
    if callable(names_filter):
        return names_filter
    wanted = set(names_filter)
    return lambda name: name in wanted


class HookedModule(nn.Module):
    """Mixin for the root model: names every HookPoint and runs with temporary hooks."""

    def setup_hooks(self) -> None:
        self.hook_dict: dict[str, HookPoint] = {}
        for name, module in self.named_modules():
            if isinstance(module, HookPoint):
                module.name = name
                self.hook_dict[name] = module

    @property
    def hook_names(self) -> list[str]:
        return list(self.hook_dict)

    @contextmanager
    def hooks(self, fwd_hooks: list[tuple[str, HookFn]]):
        """Attach (name, fn) hooks for the duration of the block; always removed, even on error."""
        handles = []
        try:
            for name, fn in fwd_hooks:
                if name not in self.hook_dict:
                    raise KeyError(f"no hook point named {name!r}; see model.hook_names")
                handles.append(self.hook_dict[name].add_hook(fn))
            yield self
        finally:
            for handle in handles:
                handle.remove()

    def run_with_hooks(self, *args, fwd_hooks: list[tuple[str, HookFn]] = (), **kwargs):
        with self.hooks(list(fwd_hooks)):
            return self(*args, **kwargs)
