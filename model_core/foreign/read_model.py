"""ReadModel: a module the explorer did not build, wrapped so its views read it as they read our GPT: a GPTConfig
describing what was found, forward() giving logits, run_with_cache() by TransformerLens's hook names (read from
the module's own forward pass: model_core.foreign.reading), the token and position tables and the logit lens when
they were found. What was not found is in `missing`, a sentence per need, which the app's views say instead."""
import copy
from typing import Optional

import torch
from torch import nn

from model_core.foreign.reading import Layout, ReadError, activations, layout_for, logits_of
from model_core.model.cache import ActivationCache
from model_core.model.config import ConfigError, GPTConfig


class ReadModel(nn.Module):
    """inner: the learner's module (transformer_explorer.show hands it a copy, so a view keeps the weights it was
    opened on)."""

    reads_whole_window = True  # generation runs forward() on the whole window each step (no KV cache to extend)

    def __init__(self, inner: nn.Module, layout: Layout):
        super().__init__()
        self.inner, self.layout = inner, layout
        try:
            self.cfg = GPTConfig(vocab_size=layout.vocab_size, block_size=layout.block_size, d_model=layout.d_model,
                                 n_heads=layout.n_heads, n_layers=layout.n_layers,
                                 positional="learned" if layout.pos_embed else "none")
        except (ConfigError, ValueError) as err:
            raise ReadError(f"{layout.kind} was read ({layout.n_layers} layers of {layout.n_heads} heads, d_model "
                            f"{layout.d_model}) but the explorer cannot draw that shape: {err}") from None
        self.missing = dict(layout.missing)
        if layout.embed is None:
            self.missing["embed"] = (f"{layout.kind}'s token embedding: no nn.Embedding was called with the prompt's "
                                     "token ids")
        self.ln_final = FinalNorm(self)

    @classmethod
    def of(cls, module: nn.Module, vocab_size: int) -> "ReadModel":
        """Read module (ReadError saying why when it cannot be read), in eval mode while it is read."""
        was_training = module.training
        module.eval()
        try:
            return cls(module, layout_for(module, vocab_size))
        finally:
            module.train(was_training)

    # ------------------------------------------------------------ what the app's views call

    def forward(self, idx: torch.Tensor, targets: Optional[torch.Tensor] = None):
        """idx [B, T] -> (logits [B, T, V] (only the last position when the module gives only that), None)."""
        rows = [idx[i] for i in range(idx.shape[0])] if self.layout.unbatched else [idx]
        outs = []
        for row in rows:
            logits = logits_of(self.inner(row.to(self.device)))
            outs.append(logits[None] if logits.dim() == 2 else logits)
        return torch.cat(outs).float().cpu(), None

    @torch.no_grad()
    def run_with_cache(self, idx: torch.Tensor, names_filter=None):
        """idx [1, T] -> (logits [1, T, V], ActivationCache) with the hook points read (names_filter: a tuple of names
        or a predicate; a name the module does not show is simply absent)."""
        logits, store = activations(self.inner, self.layout, idx.to(self.device))
        if names_filter is not None:
            keep = names_filter if callable(names_filter) else set(names_filter).__contains__
            store = {name: t for name, t in store.items() if keep(name)}
        return logits.cpu(), ActivationCache({name: t.float().cpu() for name, t in store.items()}, self.cfg.n_layers)

    def unembed(self, x: torch.Tensor) -> torch.Tensor:
        """The module's own unembedding of final-normed streams [N, D] -> [N, V]."""
        self.require("lens")
        return modules_of(self.inner)[self.layout.head](x)

    @property
    def embed(self) -> nn.Embedding:
        self.require("embed")
        return modules_of(self.inner)[self.layout.embed]

    def position_embeddings(self, T: int, start: int = 0) -> torch.Tensor:
        """Rows start..start+T-1 of the position table [T, D]; zeros when the module has none."""
        if self.layout.pos_embed is None:
            return torch.zeros(T, self.cfg.d_model)
        return modules_of(self.inner)[self.layout.pos_embed].weight[start:start + T]

    def require(self, need: str) -> None:
        """ReadError naming what a view needs that the reading did not find."""
        if need in self.missing:
            raise ReadError(f"This view needs {self.missing[need]}.")

    @property
    def device(self) -> torch.device:
        return next(self.inner.parameters(), torch.empty(0)).device

    def num_params(self) -> int:
        return sum(p.numel() for p in self.inner.parameters())

    @property
    def frozen(self) -> bool:
        return False

    def copy(self) -> "ReadModel":
        """A model of its own (a session's), reading a copy of the module."""
        return ReadModel(copy.deepcopy(self.inner), self.layout)


class FinalNorm:
    """The module's final norm as our GPT's ln_final: .norm(x) applies whatever runs between its last block and its
    unembedding."""

    def __init__(self, model: ReadModel):
        self.model = model

    def norm(self, x: torch.Tensor) -> torch.Tensor:
        self.model.require("lens")
        modules = modules_of(self.model.inner)
        for name in self.model.layout.final:
            x = modules[name](x)
        return x


def modules_of(module: nn.Module) -> dict:
    return dict(module.named_modules())
