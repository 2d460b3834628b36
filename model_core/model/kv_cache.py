"""KV cache: every layer's keys and values of the positions seen so far, so generation feeds only new tokens.

GPT.extend(new_ids, cache) runs the new positions and appends their keys and values; attention's queries
for them read the cached ones instead of recomputing the whole context. The buffers are allocated once at
block_size, so a step writes into them and never concatenates.

The context window past block_size (window_start, the one rule of the cached and the uncached path): the
model reads the tokens [start, n) of the n so far. At first start = max(0, prompt_len - block_size). When
the next step would need more than block_size positions, the window jumps: start = n - block_size // 2.
The newest half block is re-encoded once, then the window grows one token per step until it is full again,
so one step in block_size // 2 + 1 re-encodes half a block (1 in 33 for block_size 64) and the others feed
one token. (A sliding window, always the last block_size tokens, would re-encode a whole block every step:
every position shifts.) The trade for the speed: past block_size the model sees between block_size // 2
and block_size tokens of context, not always block_size."""
from typing import Optional, Sequence

import torch


class LayerKV:
    """One layer's keys and values: (B, H, block, dh) buffers whose first `length` positions are filled."""

    def __init__(self, shape: tuple, device, dtype):
        self.k = torch.empty(shape, device=device, dtype=dtype)  # (B, H, block, dh)
        self.v = torch.empty(shape, device=device, dtype=dtype)  # (B, H, block, dh)
        self.length = 0  # positions filled

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new positions' k, v (B, H, T, dh) -> keys and values of every position so far
        (B, H, length + T, dh), views of the buffers."""
        start, end = self.length, self.length + k.size(2)
        if end > self.k.size(2):
            raise ValueError(f"the cache holds {self.k.size(2)} positions (block_size); {end} do not fit: "
                             f"clear it and re-encode the last block_size tokens.")
        self.k[:, :, start:end] = k
        self.v[:, :, start:end] = v
        self.length = end
        return self.k[:, :, :end], self.v[:, :, :end]


class KVCache:
    """A LayerKV per block, all at the same length: GPT.extend fills them layer by layer."""

    def __init__(self, cfg, batch: int, device=None, dtype=torch.float32, capacity: Optional[int] = None):
        """capacity: the most positions it will hold (block_size by default; a generation that needs fewer
        asks for fewer: a 2,048-token block of a 30-layer model is 100 MB per row)."""
        capacity = cfg.block_size if capacity is None else max(1, min(capacity, cfg.block_size))
        shape = (batch, cfg.kv_heads, capacity, cfg.d_head)  # (B, Hkv, capacity, dh)
        self.layers = [LayerKV(shape, device, dtype) for _ in range(cfg.n_layers)]

    @classmethod
    def for_model(cls, model, batch: int, capacity: Optional[int] = None) -> "KVCache":
        """An empty cache on the model's device, in its parameters' dtype."""
        p = next(model.parameters())
        return cls(model.cfg, batch, p.device, p.dtype, capacity)

    @property
    def length(self) -> int:
        """Positions cached so far: the position of the next token."""
        return self.layers[0].length

    def clear(self) -> None:
        for layer in self.layers:
            layer.length = 0

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Drop every batch row not in rows (finished generations), keeping the rest in that order."""
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.layers[0].k.device)
        for layer in self.layers:
            layer.k, layer.v = layer.k.index_select(0, index), layer.v.index_select(0, index)


def window_start(prompt_len: int, n: int, block_size: int) -> int:
    """Index of the first token the model reads when the rows hold n tokens, the first prompt_len of them the
    prompt: the context is tokens [window_start, n). The half-window rule (see the module docstring): start at
    max(0, prompt_len - block_size); whenever the window would exceed block_size, jump to n - block_size // 2."""
    start = max(0, prompt_len - block_size)
    if n - start <= block_size:
        return start
    half = max(1, block_size // 2)
    period = block_size - half + 1  # tokens between jumps: the window grows from half to block_size, then jumps
    first_jump = start + block_size + 1  # the first n whose window would hold block_size + 1 tokens
    last_jump = first_jump + (n - first_jump) // period * period
    return last_jump - half


class NextTokenLogits:
    """Logits of the token that follows each row of ids, the model reading each row's window
    [window_start(...), n) (what forward() on those tokens gives). The rows grow together, one token per
    call, from prompt_len tokens. use_cache=False, or hooks attached to the model, runs forward() on the
    whole window every call: the reference, with the same window, so both draw the same tokens.

    Cached, a call feeds only the new token while the window grows; when the window jumps, every position
    moves (the tokens that stay are now at positions 0..block_size//2 - 1) and the dropped tokens no longer
    feed the others, whatever the positional scheme, so the cache is emptied and the kept half re-encoded
    once. python -m bench.generation measures both kinds of step."""

    def __init__(self, model, rows: int, prompt_len: int, use_cache: bool = True,
                 max_new_tokens: Optional[int] = None):
        self.model, self.block, self.prompt_len = model, model.cfg.block_size, prompt_len
        self.device = next(model.parameters()).device
        # hooks (ablations, probes) would see only the new positions: with any attached, run forward() as before
        hooked = getattr(model, "reads_whole_window", False) or any(h.has_hooks() for h in model.hook_dict.values())
        if not hooked:  # a pretrained model generates with its twin (GPT.for_generation)
            model = self.model = model.for_generation(rows)
        self.capacity = None if max_new_tokens is None else prompt_len + max_new_tokens  # the longest window read
        self.cache = KVCache.for_model(model, rows, self.capacity) if use_cache and not hooked else None
        self.start = 0  # first token of the window the cache holds

    def __call__(self, rows: Sequence[Sequence[int]]) -> torch.Tensor:
        """rows: token ids, all the same length (prompt_len, then one more each call) -> (len(rows), V)
        float32 logits on the CPU."""
        start = window_start(self.prompt_len, len(rows[0]), self.block)
        if self.cache is None:
            context = torch.tensor([r[start:] for r in rows], dtype=torch.long, device=self.device)  # (B, T)
            return self.model(context)[0][:, -1].float().cpu()  # (B, V)
        if start != self.start:  # the window jumped: nothing cached is still valid
            self.cache.clear()
            self.start = start
        done = start + self.cache.length  # tokens already in the cache or before the window
        if self.cache.length == 0 and len(rows) > 1 and all(r == rows[0] for r in rows):
            return self.encode_once(rows[0][done:], len(rows))
        new = torch.tensor([r[done:] for r in rows], dtype=torch.long, device=self.device)  # (B, 1), (B, T) at a jump
        return self.model.extend(new, self.cache, last_only=True)[:, -1].float().cpu()  # (B, V)

    def encode_once(self, tokens: Sequence[int], rows: int) -> torch.Tensor:
        """Every row holds these same tokens (Compare's prompt): encode one row, then copy its keys and values to
        all -> (rows, V) logits."""
        one = KVCache.for_model(self.model, 1, self.capacity)
        logits = self.model.extend(torch.tensor([list(tokens)], device=self.device), one, last_only=True)  # (1, 1, V)
        one.keep_rows([0] * rows)
        self.cache = one
        return logits[:, -1].float().cpu().repeat(rows, 1)  # (rows, V)

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Continue with these rows only (indices into the rows of the last call)."""
        if self.cache is not None:
            self.cache.keep_rows(rows)
