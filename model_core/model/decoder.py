"""One new token per row through a frozen (pretrained) model, in as few torch calls as its arithmetic needs.

Through the hooked modules a SmolLM2-135M token is ~6,000 torch calls (hook points, module calls, views, the
rotary's slices); at a few microseconds each that is as long as reading its weights. The decoder walks the same
weights, in a format of model_core.model.quantized, in ~40 calls per layer, and fills the KV cache GPT.extend
fills: the prompt and the context window's jumps still run through GPT.extend (float32), so only steps of one new
token come here. Pre-norm rotary models only (Llama, Qwen2, SmolLM2): Decoder.supports says which."""
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from model_core.model.layers import ACTIVATION_FNS

Linear = Callable[[torch.Tensor], torch.Tensor]  # (R, K) -> (R, N), a layer of model_core.model.quantized


@dataclass
class DecoderLayer:
    norm1: Callable  # (B, D) -> (B, D)
    qkv: Linear  # (B, D) -> (B, (H + 2 Hkv) dh)
    o: Linear  # (B, D) -> (B, D)
    norm2: Callable
    ffn_in: Linear  # (B, D) -> (B, 2M): gate then up (swiglu), or (B, M)
    down: Linear  # (B, M) -> (B, D)


def norm_of(module: nn.Module, cfg) -> Callable:
    """A Norm module's function of (B, D), reading its own weights."""
    norm = module.norm
    if isinstance(norm, nn.RMSNorm):
        return lambda x: F.rms_norm(x, norm.normalized_shape, norm.weight, cfg.norm_eps)
    return lambda x: F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, cfg.norm_eps)


def weight_and_bias(*linears: nn.Linear):
    """The weights (and biases, if any) of linears sharing an input, stacked: one product computes them all."""
    weight = linears[0].weight if len(linears) == 1 else torch.cat([m.weight for m in linears])
    biases = [m.bias for m in linears]
    if all(b is None for b in biases):
        return weight, None
    return weight, torch.cat([b if b is not None else m.weight.new_zeros(m.out_features)
                              for b, m in zip(biases, linears)])


class Decoder:
    """Steps of one new token for a frozen model: decoder(idx (B, 1), cache) -> logits (B, 1, V), what
    model.extend(idx, cache, last_only=True) computes. `linear(weight, bias)` makes the layers
    (model_core.model.quantized), `unembed(weight, bias)` the unembedding; `fuse`: the FFN's gate and up
    projections as one product (a format that copies its weights anyway; float32 would need a 200 MB copy)."""

    def __init__(self, model, linear, unembed, fuse: bool):
        cfg = self.cfg = model.cfg
        self.embed = model.embed.weight  # (V, D)
        self.layers = [self.layer(block, cfg, linear, fuse) for block in model.blocks]
        self.norm_final = norm_of(model.ln_final, cfg)
        self.unembed = unembed(*weight_and_bias(model.unembed))
        rotary = model.blocks[0].attn.rotary
        half, dh = rotary.dims // 2, cfg.d_head
        cos, sin = rotary.cos[:, 0], rotary.sin[:, 0]  # (block, dims/2)
        ones, zeros = cos.new_ones(cos.size(0), dh - rotary.dims), cos.new_zeros(cos.size(0), dh - rotary.dims)
        self.cos = torch.cat([cos, cos, ones], -1)  # (block, dh); dimensions past rotary.dims pass through
        self.sin = torch.cat([-sin, sin, zeros], -1)  # (block, dh), signed: x1 cos - x2 sin | x2 cos + x1 sin
        self.swap = torch.cat([torch.arange(half, 2 * half), torch.arange(half), torch.arange(2 * half, dh)])
        self.activation = None if cfg.activation == "swiglu" else ACTIVATION_FNS[cfg.activation]

    @staticmethod
    def supports(cfg) -> bool:
        """Pre-norm blocks with attention and FFN, rotary positions, no qk-norm."""
        return (cfg.positional == "rope" and cfg.norm_placement == "pre" and cfg.norm in ("rmsnorm", "layernorm")
                and not (cfg.parallel_blocks or cfg.qk_norm or cfg.attn_only))

    @staticmethod
    def layer(block, cfg, linear, fuse: bool) -> DecoderLayer:
        mlp = block.mlp
        ffn = [mlp.W_gate, mlp.W_in] if cfg.activation == "swiglu" else [mlp.W_in]
        if len(ffn) == 1 or fuse:
            ffn_in = linear(*weight_and_bias(*ffn))
        else:  # two products, outputs side by side
            gate, up = (linear(*weight_and_bias(m)) for m in ffn)
            ffn_in = lambda h: torch.cat([gate(h), up(h)], -1)  # noqa: E731
        return DecoderLayer(norm_of(block.ln1, cfg), linear(*weight_and_bias(block.attn.W_qkv)),
                            linear(*weight_and_bias(block.attn.W_o)), norm_of(block.ln2, cfg), ffn_in,
                            linear(*weight_and_bias(mlp.W_out)))

    def __call__(self, idx: torch.Tensor, cache) -> torch.Tensor:
        position = cache.length
        cos, sin = self.cos[position], self.sin[position]  # (dh,)
        x = self.embed[idx[:, 0]]  # (B, D)
        for layer, kv in zip(self.layers, cache.layers):
            x = x + layer.o(self.attention(layer.qkv(layer.norm1(x)), kv, cos, sin))  # (B, D)
            x = x + layer.down(self.ffn(layer.ffn_in(layer.norm2(x))))  # (B, D)
        return self.unembed(self.norm_final(x)).unsqueeze(1)  # (B, 1, V)

    def attention(self, qkv: torch.Tensor, kv, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """qkv (B, (H + 2 Hkv) dh) of the new position -> z (B, D): its queries over every cached position."""
        B = qkv.size(0)
        H, Hkv, dh = self.cfg.n_heads, self.cfg.kv_heads, self.cfg.d_head
        qkv = qkv.reshape(B, H + 2 * Hkv, dh)
        qk = torch.addcmul(qkv[:, :H + Hkv] * cos, qkv[:, :H + Hkv, self.swap], sin)  # (B, H + Hkv, dh) rotated
        keys, values = kv.extend(qk[:, H:, None], qkv[:, H + Hkv:, None])  # (B, Hkv, length, dh)
        z = F.scaled_dot_product_attention(qk[:, :H, None], keys, values, enable_gqa=Hkv != H)  # (B, H, 1, dh)
        return z.reshape(B, H * dh)

    def ffn(self, pre: torch.Tensor) -> torch.Tensor:
        """(B, 2M) gate and up, or (B, M) -> the neurons (B, M)."""
        if self.activation is not None:
            return self.activation(pre)
        gate, up = pre.chunk(2, dim=-1)  # (B, M) each
        return F.silu(gate) * up
