"""GPT: a decoder-only transformer with a named hook point on every intermediate activation."""
import copy
import itertools
import math
import threading
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from model_core.model.cache import ActivationCache
from model_core.model.config import GPTConfig
from model_core.model.generation_paths import (
    REFERENCE,
    WIDTHS,
    PathChoice,
    choose_generation_path,
    generation_twin,
    never,
    width_of,
)
from model_core.model.hooks import HookedModule, HookPoint, NamesFilter, names_predicate
from model_core.model.kv_cache import KVCache
from model_core.model.layers import Block, Norm, maybe_dropout, sinusoidal_table

GPT2_STD = 0.02  # GPT-2's initial weight scale (cfg.init "gpt2")

def embedding(n: int, d: int, shapes_only: bool) -> nn.Embedding:
    """nn.Embedding(n, d) [n, d]; shapes_only (on the meta device): without nn.Embedding's own random init."""
    return nn.Embedding(n, d, _weight=torch.empty(n, d) if shapes_only else None)


class GPT(HookedModule):
    """Token + position embedding, n_layers blocks, final norm, unembedding to logits at every position."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        # Built on the meta device (shapes only: a size check, a file's shapes, with_weights), nothing is drawn: a
        # random draw there would also import torch._dynamo (68 MB) for the meta device's normal_.
        shapes_only = torch.empty(0).is_meta
        self.embed = embedding(cfg.vocab_size, cfg.d_model, shapes_only)
        self.hook_embed = HookPoint()  # [batch, pos, d_model]
        if cfg.positional == "learned":
            self.pos_embed = embedding(cfg.block_size, cfg.d_model, shapes_only)
        elif cfg.positional == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal_table(cfg.block_size, cfg.d_model), persistent=False)
        if cfg.has_position_vectors:  # rope and none add nothing to the residual stream, so nothing to hook
            self.hook_pos_embed = HookPoint()  # [batch, pos, d_model]
        self.drop = maybe_dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layers)])
        # Post-norm blocks already end in a norm, so only pre-norm models get a final one.
        self.ln_final = Norm(cfg, cfg.norm if cfg.norm_placement == "pre" else "none")
        self.unembed = nn.Linear(cfg.d_model, cfg.vocab_size, bias=cfg.has_unembed_bias)
        if not shapes_only:
            self.initialise()
        if cfg.tie_weights:
            self.unembed.weight = self.embed.weight
        self.shared: Optional[dict] = None  # what a frozen model's copies share (see freeze)
        self.decoder = None  # a generation twin's one-token steps (see for_generation)
        self.setup_hooks()

    @classmethod
    def with_weights(cls, cfg: GPTConfig, tensors: dict) -> "GPT":
        """A model in eval mode whose parameters are the given tensors (a state dict; a tied unembed.weight may
        be left out), without initialising weights that are replaced at once (seconds for 100M parameters).
        Built on the meta device, so every parameter must be in tensors: KeyError names a missing one."""
        with torch.device("meta"):
            model = cls(cfg)
        if cfg.tie_weights:
            tensors = {k: v for k, v in tensors.items() if k != "unembed.weight"}
        model.load_state_dict(tensors, strict=False, assign=True)
        if cfg.tie_weights:
            model.unembed.weight = model.embed.weight
        missing = [name for name, p in model.named_parameters() if p.is_meta]
        if missing:
            raise KeyError(f"no weights for {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
        return model.eval()

    def copy(self) -> "GPT":
        """A copy with hook points of its own (hooks are per module object). A frozen model's tensors (a
        pretrained model nobody trains) are shared with this model, not copied: 30 sessions of a
        135M-parameter model hold its 540 MB of weights once."""
        return copy.deepcopy(self)

    def __deepcopy__(self, memo):
        """copy.deepcopy shares frozen tensors too (see copy), wherever it is called: a caller that deep-copies
        the inspected model (Experiments' "copy as model B") costs hook points, not 540 MB."""
        if self.frozen:
            memo.update({id(t): t for t in itertools.chain(self.parameters(), self.buffers())})
            if self.shared is not None:
                memo[id(self.shared)] = self.shared
        clone = self.__class__.__new__(self.__class__)
        memo[id(self)] = clone
        clone.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return clone

    def freeze(self) -> "GPT":
        """Mark every weight read-only for good (no gradients): copies share them (see copy), and the
        generation twin (see for_generation)."""
        self.requires_grad_(False)
        self.shared = {"lock": threading.Lock()}  # one dict for this model and all its copies
        return self

    def for_generation(self, rows: int = 1) -> "GPT":
        """The model that generates `rows` rows at once: itself, or for a frozen (pretrained) model a twin that
        every copy shares, whose one-token steps skip the hook points (model_core.model.decoder) and read the
        linear layers in the format pick_generation_path found fastest on this machine for that many rows
        (float32 until it has run). The twin's module tree is this model's tensors: the prompt runs through it in
        float32. The analysis views always read this model."""
        shared = self.shared
        if shared is None:
            return self
        with shared["lock"]:
            if "generation" not in shared:
                try:
                    twin = generation_twin(self, REFERENCE)
                except ValueError:  # an architecture the decoder does not cover
                    twin = self
                shared["generation"] = {width: twin for width in WIDTHS}
        return shared["generation"][width_of(rows)]

    def pick_generation_path(self, checks, stop_token: Optional[int] = None, cancelled=never) -> PathChoice:
        """Measure this frozen model's generation paths (model_core.model.generation_paths) on the check prompts
        `checks` (token ids) and generate with the fastest that agree with float32 from now on, in every copy.
        cancelled() True: stop measuring (generation_paths.Cancelled), nothing changes."""
        if self.shared is None:
            raise ValueError("only a frozen model has generation paths: freeze() it first")
        twins, choice = choose_generation_path(self, checks, stop_token, cancelled=cancelled)
        with self.shared["lock"]:
            self.shared["generation"], self.shared["generation_choice"] = twins, choice
        return choice

    @property
    def frozen(self) -> bool:
        return not any(p.requires_grad for p in self.parameters())

    def initialise(self) -> None:
        """Random weights as cfg.init says (before tying: a tied unembedding is the embedding), zero biases."""
        std = GPT2_STD if self.cfg.init == "gpt2" else self.cfg.d_model ** -0.5

        def start(module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=std)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        self.apply(start)
        if self.cfg.init == "gpt2":  # GPT-2: the residual projections scaled by depth
            for name, p in self.named_parameters():
                if name.endswith(("W_o.weight", "W_out.weight")):
                    nn.init.normal_(p, mean=0.0, std=GPT2_STD / math.sqrt(2 * self.cfg.n_layers))

    def num_params(self) -> int:
        """Trainable parameters, counting a tied matrix once."""
        return sum(p.numel() for p in self.parameters())

    def position_embeddings(self, T: int, start: int = 0) -> torch.Tensor:
        """(T, D) learned or sinusoidal vectors of positions start..start+T-1; zeros for rope and none."""
        if self.cfg.positional == "learned":
            return self.pos_embed.weight[start:start + T]
        if self.cfg.positional == "sinusoidal":
            return self.pos_table[start:start + T]
        return self.embed.weight.new_zeros(T, self.cfg.d_model)

    def forward(self, idx: torch.Tensor, targets: Optional[torch.Tensor] = None):
        """idx (B, T) token ids -> logits (B, T, vocab), and the mean cross-entropy if targets are given (-1: no
        target there). When only the last position has targets (a task's answer), the logits are that position's
        alone (B, 1, vocab): the last block's FFN and the unembedding skip what no loss reads."""
        B, T = idx.shape
        if T > self.cfg.block_size:
            raise ValueError(f"sequence of {T} tokens is longer than block_size {self.cfg.block_size}; crop it.")
        answer_only = targets is not None and T > 1 and not bool((targets[:, :-1] >= 0).any())
        x = self.embeddings(idx)  # (B, T, D)
        for i, block in enumerate(self.blocks):
            x = block(x, last_only=answer_only and i == len(self.blocks) - 1)  # (B, T, D), (B, 1, D) if answer_only
        logits = self.unembed(self.ln_final(x))  # (B, T or 1, V)
        loss = None
        if targets is not None:
            targets = targets[:, -1:] if answer_only else targets
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)
        return logits, loss

    def embeddings(self, idx: torch.Tensor, start: int = 0) -> torch.Tensor:
        """idx (B, T) tokens at positions start..start+T-1 -> the residual stream entering block 0 (B, T, D)."""
        B, T = idx.shape
        x = self.hook_embed(self.embed(idx))  # (B, T, D)
        if self.cfg.has_position_vectors:  # rope positions act inside attention instead
            x = x + self.hook_pos_embed(self.position_embeddings(T, start).expand(B, T, -1))  # (B, T, D)
        return self.drop(x)  # (B, T, D)

    def extend(self, idx: torch.Tensor, cache: KVCache, last_only: bool = False) -> torch.Tensor:
        """Logits (B, T, V) of new tokens idx (B, T) that follow the cache.length positions in cache, whose
        keys and values the new ones join; last_only: the last position's only (B, 1, V), and the last
        block skips the others. Same logits as forward() on the whole sequence. Generation's path
        (model_core.model.sampling): hook points would see only the new positions."""
        B, T = idx.shape
        start = cache.length
        if start + T > self.cfg.block_size:
            raise ValueError(f"{start} cached + {T} new tokens exceed block_size {self.cfg.block_size}: clear "
                             f"the cache and extend it with the last {self.cfg.block_size} tokens.")
        if self.decoder is not None and T == 1 and last_only:  # a generation twin's step (see for_generation)
            return self.decoder(idx, cache)
        x = self.embeddings(idx, start)  # (B, T, D)
        for i, (block, kv) in enumerate(zip(self.blocks, cache.layers)):
            x = block(x, kv, last_only and i == len(self.blocks) - 1)  # (B, T, D), (B, 1, D) after a last_only
        return self.unembed(self.ln_final(x))  # (B, T, V) or (B, 1, V)

    @torch.no_grad()
    def run_with_cache(self, idx: torch.Tensor, names_filter: NamesFilter = None):
        """Forward pass that saves the activations named by names_filter (all by default).

        Returns (logits, ActivationCache); cached tensors are detached and on the CPU."""
        keep = names_predicate(names_filter)
        store: dict[str, torch.Tensor] = {}

        def save(tensor, hook):
            store[hook.name] = tensor.detach() if tensor.device.type == "cpu" else tensor.detach().cpu()

        hooks = [(name, save) for name in self.hook_names if keep(name)]
        logits, _ = self.run_with_hooks(idx, fwd_hooks=hooks)
        ordered = {name: store[name] for name in self.hook_names if name in store}
        return logits, ActivationCache(ordered, self.cfg.n_layers)
