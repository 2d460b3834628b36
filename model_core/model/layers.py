"""The parts of a block: norm, causal self-attention, feed-forward. Shapes in comments:
B batch, T positions, D d_model, H heads, dh d_head, M d_mlp."""
import functools
import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from model_core.model.config import GPTConfig
from model_core.model.hooks import HookPoint
from model_core.model.kv_cache import LayerKV
from model_core.model.rope import Rotary


def maybe_dropout(p: float) -> nn.Module:
    """Dropout, or identity when p is 0 (torch's dropout still draws a mask at p=0 in training)."""
    return nn.Dropout(p) if p > 0 else nn.Identity()


class Norm(nn.Module):
    """LayerNorm, RMSNorm or identity, followed by a hook on the normalised output."""

    def __init__(self, cfg: GPTConfig, kind: str, width: Optional[int] = None):
        super().__init__()
        width = width or cfg.d_model
        if kind == "layernorm":
            self.norm = nn.LayerNorm(width, eps=cfg.norm_eps, bias=cfg.bias)
        elif kind == "rmsnorm":
            self.norm = nn.RMSNorm(width, eps=cfg.norm_eps)
        else:
            self.norm = nn.Identity()
        self.hook_normalized = HookPoint()  # [batch, pos, d_model] ([batch, pos, head, d_head] for qk-norm)

    def forward(self, x):
        return self.hook_normalized(self.norm(x))


@functools.lru_cache(maxsize=4)
def causal_mask(block_size: int) -> torch.Tensor:
    """(block, block) bool, True where a query may attend a key: one tensor shared by every layer."""
    return torch.tril(torch.ones(block_size, block_size, dtype=torch.bool, device="cpu"))


class CausalSelfAttention(nn.Module):
    """Multi-head masked self-attention, grouped-query when n_kv_heads < n_heads (Hkv key/value heads,
    each serving H / Hkv consecutive query heads). Materialises scores and pattern only when hooked."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_heads, self.n_kv, self.d_head, self.dropout = cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.dropout
        self.W_qkv = nn.Linear(cfg.d_model, (cfg.n_heads + 2 * cfg.kv_heads) * cfg.d_head, bias=cfg.has_qkv_bias)
        self.W_o = nn.Linear(cfg.d_model, cfg.d_model, bias=cfg.bias)
        self.attn_dropout = maybe_dropout(cfg.dropout)
        self.register_buffer("causal", causal_mask(cfg.block_size), persistent=False)  # (block, block)
        self.hook_q = HookPoint()  # [batch, pos, head, d_head]
        self.hook_k = HookPoint()  # [batch, pos, kv_head, d_head]
        self.hook_v = HookPoint()  # [batch, pos, kv_head, d_head]
        if cfg.qk_norm:  # RMSNorm over each head's d_head: q.k is bounded, so the logits cannot blow up
            self.q_norm = Norm(cfg, "rmsnorm", cfg.d_head)  # hook q_norm.hook_normalized [batch, pos, head, d_head]
            self.k_norm = Norm(cfg, "rmsnorm", cfg.d_head)  # hook k_norm.hook_normalized [batch, pos, head, d_head]
        if cfg.positional == "rope":
            self.rotary = Rotary(cfg.block_size, cfg.rotated_dims, cfg.rope_base)
            self.hook_rot_q = HookPoint()  # [batch, pos, head, d_head], q after the rotation
            self.hook_rot_k = HookPoint()  # [batch, pos, kv_head, d_head], k after the rotation
        self.qk_norm, self.rope = cfg.qk_norm, cfg.positional == "rope"
        self.hook_attn_scores_unmasked = HookPoint()  # [batch, head, query, key], scaled q.k
        self.hook_attn_scores = HookPoint()  # [batch, head, query, key], -inf above the diagonal
        self.hook_pattern = HookPoint()  # [batch, head, query, key], rows sum to 1
        self.hook_z = HookPoint()  # [batch, pos, head, d_head], pattern-weighted values
        self.force_explicit = False  # tests flip this to compare the two paths

    def wants_pattern(self) -> bool:
        """True when something reads the scores or pattern, so they must be materialised."""
        return (self.force_explicit or self.hook_attn_scores_unmasked.has_hooks() or self.hook_attn_scores.has_hooks()
                or self.hook_pattern.has_hooks())

    def forward(self, x, kv: Optional[LayerKV] = None, last_only: bool = False):
        """x (B, T, D) -> (B, T, D). With kv (generation's cache) x holds the T positions that follow the
        kv.length cached ones: their keys and values join the cache, their queries attend over all of it.
        last_only: only the last position asks (B, 1, D); the others give their keys and values."""
        B, T, D = x.shape
        H, Hkv, dh = self.n_heads, self.n_kv, self.d_head
        start = kv.length if kv is not None else 0  # position of x's first token
        q, k, v = self.W_qkv(x).view(B, T, H + 2 * Hkv, dh).split((H, Hkv, Hkv), dim=2)  # (B, T, H|Hkv|Hkv, dh)
        if last_only:
            q = q[:, -1:]  # (B, 1, H, dh)
        Tq = q.size(1)  # query positions: the last Tq of x's
        q = self.hook_q(q)  # (B, Tq, H, dh)
        k = self.hook_k(k)  # (B, T, Hkv, dh)
        v = self.hook_v(v)  # (B, T, Hkv, dh)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)  # unit RMS per head times a learned gain
        if self.rope:
            q = self.hook_rot_q(self.rotary(q, start + T - Tq))  # (B, Tq, H, dh)
            k = self.hook_rot_k(self.rotary(k, start))  # (B, T, Hkv, dh)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, H or Hkv, Tq or T, dh)
        if kv is not None:
            k, v = kv.extend(k, v)  # (B, Hkv, start + T, dh): the cached positions, then these
        if self.wants_pattern():
            z = self.explicit_attention(q, k, v)  # (B, H, Tq, dh)
        else:
            p = self.dropout if self.training else 0.0
            Tk = k.size(2)
            causal = Tq == Tk  # the same positions ask and answer: the usual triangle
            # one query (the newest position) sees every key; several see the keys up to their own
            mask = None if causal or Tq == 1 else self.causal[Tk - Tq:Tk, :Tk]  # (Tq, Tk)
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal,
                                               enable_gqa=Hkv != H)
        z = self.hook_z(z.transpose(1, 2))  # (B, Tq, H, dh)
        return self.W_o(z.reshape(B, Tq, D))  # (B, Tq, D)

    def explicit_attention(self, q, k, v):
        """q (B, H, Tq, dh) for the last Tq of the Tk positions of k, v (B, Hkv, Tk, dh) -> z (B, H, Tq, dh)."""
        Tq, Tk = q.size(2), k.size(2)  # equal, except for new positions after a cache
        if self.n_kv != self.n_heads:  # each key/value head serves H / Hkv consecutive query heads
            k, v = (t.repeat_interleave(self.n_heads // self.n_kv, dim=1) for t in (k, v))  # (B, H, Tk, dh)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, Tq, Tk)
        scores = self.hook_attn_scores_unmasked(scores)
        scores = scores.masked_fill(~self.causal[Tk - Tq:Tk, :Tk], float("-inf"))
        scores = self.hook_attn_scores(scores)
        pattern = self.hook_pattern(F.softmax(scores, dim=-1))  # (B, H, Tq, Tk)
        return self.attn_dropout(pattern) @ v  # (B, H, Tq, dh)


ACTIVATION_FNS = {
    "gelu": F.gelu,
    "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),  # GPT-2's "gelu_new"
    "relu": F.relu,
    "relu2": lambda x: F.relu(x).square(),  # ReLU squared: sparse like relu, smooth at 0; the speedrun's choice
}


class MLP(nn.Module):
    """Position-wise feed-forward: W_out(act(W_in x)), or SwiGLU W_out(silu(W_gate x) * W_in x)."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.activation = cfg.activation
        self.W_in = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.bias)  # the "up" projection for swiglu
        if cfg.activation == "swiglu":
            self.W_gate = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.bias)
        self.W_out = nn.Linear(cfg.d_mlp, cfg.d_model, bias=cfg.bias)
        self.hook_pre = HookPoint()  # [batch, pos, d_mlp], input of the non-linearity (the gate for swiglu)
        if cfg.activation == "swiglu":
            self.hook_pre_linear = HookPoint()  # [batch, pos, d_mlp], the ungated branch
        self.hook_post = HookPoint()  # [batch, pos, d_mlp], neuron activations

    def forward(self, x):
        if self.activation == "swiglu":
            pre = self.hook_pre(self.W_gate(x))  # (B, T, M)
            post = F.silu(pre) * self.hook_pre_linear(self.W_in(x))  # (B, T, M)
        else:
            pre = self.hook_pre(self.W_in(x))  # (B, T, M)
            post = ACTIVATION_FNS[self.activation](pre)  # (B, T, M)
        return self.W_out(self.hook_post(post))  # (B, T, D)


class Block(nn.Module):
    """One transformer block: attention then FFN, each added to the residual stream."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.pre_norm, self.attn_only, self.parallel = cfg.norm_placement == "pre", cfg.attn_only, cfg.parallel_blocks
        self.hook_resid_pre = HookPoint()  # [batch, pos, d_model]
        self.ln1 = Norm(cfg, cfg.norm)
        self.attn = CausalSelfAttention(cfg)
        self.hook_attn_out = HookPoint()  # [batch, pos, d_model]
        self.hook_resid_mid = HookPoint()  # [batch, pos, d_model]
        if not cfg.attn_only:
            self.ln2 = Norm(cfg, cfg.norm)
            self.mlp = MLP(cfg)
            self.hook_mlp_out = HookPoint()  # [batch, pos, d_model]
        self.hook_resid_post = HookPoint()  # [batch, pos, d_model]
        self.drop = maybe_dropout(cfg.dropout)

    def forward(self, x, kv: Optional[LayerKV] = None, last_only: bool = False):
        """x (B, T, D) -> (B, T, D). kv: this layer's cache when x holds new positions (GPT.extend);
        last_only: return the last position only (B, 1, D), the others just feed attention."""
        x = self.hook_resid_pre(x)  # (B, T, D)
        if self.parallel:  # x + attn(ln1(x)) + mlp(ln2(x)): both read the block's input (GPT-NeoX, Pythia)
            attn_out = self.hook_attn_out(self.drop(self.attn(self.ln1(x), kv, last_only)))  # (B, T or 1, D)
            x_in = x[:, -1:] if last_only else x  # (B, T or 1, D)
            x = self.hook_resid_mid(x_in + attn_out)  # the stream with attention's part, before the FFN's
            if not self.attn_only:
                x = x + self.hook_mlp_out(self.drop(self.mlp(self.ln2(x_in))))
        elif self.pre_norm:  # x + f(norm(x)): the residual stream is a running sum
            attn_out = self.hook_attn_out(self.drop(self.attn(self.ln1(x), kv, last_only)))  # (B, T or 1, D)
            x = self.hook_resid_mid((x[:, -1:] if last_only else x) + attn_out)
            if not self.attn_only:
                x = x + self.hook_mlp_out(self.drop(self.mlp(self.ln2(x))))
        else:  # norm(x + f(x)): the 2017 paper's order
            attn_out = self.hook_attn_out(self.drop(self.attn(x, kv, last_only)))  # (B, T or 1, D)
            x = self.hook_resid_mid(self.ln1((x[:, -1:] if last_only else x) + attn_out))
            if not self.attn_only:
                x = self.ln2(x + self.hook_mlp_out(self.drop(self.mlp(x))))
        return self.hook_resid_post(x)


def sinusoidal_table(block_size: int, d_model: int) -> torch.Tensor:
    """The 2017 paper's fixed encoding: sin on even dims, cos on odd dims. (block, D)"""
    pos = torch.arange(block_size, dtype=torch.float32, device="cpu").unsqueeze(1)  # (block, 1)
    div = torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float32, device="cpu") / d_model)  # (D/2,)
    table = torch.zeros(block_size, d_model, device="cpu")
    table[:, 0::2] = torch.sin(pos / div)
    table[:, 1::2] = torch.cos(pos / div)
    return table
