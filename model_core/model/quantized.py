"""The weight formats a frozen (pretrained) model's generation can read its linear layers in: float32 (the model's
own tensors), bfloat16 (half the bytes) and 4-bit integers (an eighth of the bytes, plus a scale and a zero per
32 weights), for model_core.model.decoder. Generating reads every weight once per token, so fewer bytes can mean
more tokens per second, if the CPU turns them back into numbers quickly: which format is fastest depends on the
machine (model_core.model.generation_paths measures it).

Each layer is a callable x (R, K) float32 -> (R, N) float32. The bfloat16 and 4-bit kernels take bfloat16 input.
The bfloat16 layer's input goes in as two bfloat16 rows, its rounding and what the rounding lost (bfloat16_halves):
the input's own rounding error is gone, and the two output rows are added in float32. The 4-bit layer rounds its
input once (Int4Linear says why)."""
from typing import Optional

import torch
import torch.nn.functional as F

INT4_GROUP = 32  # weights sharing one scale and zero: a Q4_1 GGUF block


def bfloat16_halves(x: torch.Tensor) -> torch.Tensor:
    """x (R, K) float32 -> (2R, K) bfloat16: its bfloat16 rounding, then what the rounding lost."""
    high = x.to(torch.bfloat16)  # (R, K)
    return torch.cat([high, (x - high).to(torch.bfloat16)])  # x - high is float32 (type promotion)


def summed_halves(both: torch.Tensor) -> torch.Tensor:
    """(2R, N) products of bfloat16_halves -> (R, N) float32: the two halves added in float32."""
    return both.view(2, -1, both.size(-1)).sum(0, dtype=torch.float32)


class Float32Linear:
    """The layer as it is: the frozen model's own float32 tensors (no copy). Computed as W x^T: for a few rows MKL
    then streams the weights once (x W^T, F.linear's order, took 2.1x as long for 4 rows as for 1 here; W x^T 1.4x)."""

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor] = None):
        self.weight, self.bias = weight, bias  # (N, K), (N,)

    def __call__(self, x):
        y = torch.mm(self.weight, x.T).T  # (R, N), a transposed view
        return y if self.bias is None else y + self.bias


class Bfloat16Linear:
    """Weights kept in bfloat16 (half the bytes); one product of both input halves reads them once. What is left
    is the weights' rounding (2^-9 of each) and the rounding of each half's bfloat16 output. A CPU with native
    bfloat16 (AVX512-BF16, AMX) multiplies them fast; others convert every weight back first."""

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor] = None):
        self.weight = weight.detach().to(torch.bfloat16)  # (N, K)
        self.bias = bias  # (N,) float32

    def __call__(self, x):
        y = summed_halves(F.linear(bfloat16_halves(x), self.weight))  # (R, N)
        return y if self.bias is None else y + self.bias


def with_exact_top(logits: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                   k: int) -> torch.Tensor:
    """logits (R, V) from rounded weights, the k largest recomputed from x (R, D) and the float32 weight (V, D). A
    bfloat16 logit near 25 is a multiple of 0.125, so near-ties between the likeliest tokens would be decided by
    rounding; the few that sampling keeps are float32 products of the residual."""
    top = logits.topk(k, dim=-1).indices  # (R, k)
    exact = torch.einsum("rd,rkd->rk", x, weight[top])  # (R, k)
    return logits.scatter(-1, top, exact if bias is None else exact + bias[top])


class Bfloat16Unembed(Bfloat16Linear):
    """The unembedding in bfloat16, then the `exact` likeliest logits again in float32 (with_exact_top)."""

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, exact: int = 32):
        super().__init__(weight, bias)
        self.float_weight = weight  # (V, D), the model's own tensor (no copy)
        self.exact = min(exact, weight.size(0))

    def __call__(self, x):
        return with_exact_top(super().__call__(x), x, self.float_weight, self.bias, self.exact)


class Int8Unembed:
    """The unembedding as 8-bit integers with a scale per token (a quarter of float32's bytes; each weight off by
    at most half a step, 1/254 of its row's largest), then the `exact` likeliest logits again in float32."""

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, exact: int = 32):
        scale = weight.detach().abs().amax(1).clamp_min(torch.finfo(weight.dtype).tiny) / 127  # (V,)
        self.q = (weight.detach() / scale[:, None]).round().to(torch.int8)  # (V, D)
        self.scale = scale.to(torch.bfloat16)
        self.float_weight, self.bias = weight, bias  # the model's own tensors (no copy)
        self.exact = min(exact, weight.size(0))

    def __call__(self, x):
        logits = torch.ops.aten._weight_int8pack_mm(x.to(torch.bfloat16), self.q, self.scale).float()  # (R, V)
        if self.bias is not None:
            logits = logits + self.bias
        return with_exact_top(logits, x, self.float_weight, self.bias, self.exact)


def int4_grid(weight: torch.Tensor, group: int = INT4_GROUP):
    """(q (N, K) int32 in 0..15, step (N, K/group), low (N, K/group)) with weight == low + step * q in every group
    of `group` weights along K (what a Q4_1 GGUF file stores), or None when the weights are not on such a grid:
    then 4 bits would change them."""
    N, K = weight.shape
    if K % group or N % 16:  # the int4 kernel's blocks
        return None
    groups = weight.detach().view(N, K // group, group)  # (N, K/g, g)
    low, high = groups.amin(-1), groups.amax(-1)  # (N, K/g)
    step = (high - low) / 15
    q = ((groups - low[..., None]) / step.clamp_min(torch.finfo(step.dtype).tiny)[..., None]).round()
    off = (low[..., None] + step[..., None] * q - groups).abs()  # (N, K/g, g): 0 up to float32 rounding on a grid
    if bool((off > 1e-3 * step[..., None]).any()):
        return None
    return q.view(N, K).to(torch.int32), step, low


class Int4Linear:
    """Weights kept as the 4-bit numbers of their grid (int4_grid) with a scale and a zero per group: 5/8 of a
    byte per weight, 1/6 of float32's bytes. torch's int4 kernel rebuilds each weight as (q - 8) * scale + zero in
    float32 from bfloat16 scales and zeros, which rounds them (2^-9) as bfloat16 weights would, and multiplies them
    by the input rounded to bfloat16 (2^-9 of each entry). The kernel rebuilds the weights again for every 4 input
    rows, so the input goes in once, not as bfloat16_halves (8 rows for Compare's 4: two passes): SmolLM2's step took
    17.7 ms for one row and 26.4 ms for 4 instead of 23.5 and 36.3 (Sapphire Rapids, 2 threads), and its greedy
    answers equal float32's on 10 of 10 check prompts either way."""

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor] = None):
        grid = int4_grid(weight)
        if grid is None:
            raise ValueError(f"the weights are not on a 4-bit grid in every group of {INT4_GROUP}: 4 bits would change them")
        q, step, low = grid
        self.packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1)  # (N, K/2) uint8
        zero = low + 8 * step  # the kernel subtracts 8 from every q
        self.scales_and_zeros = torch.stack([step, zero], -1).transpose(0, 1).contiguous().to(torch.bfloat16)
        self.bias = bias  # (N,) float32

    def __call__(self, x):
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(x.to(torch.bfloat16), self.packed, INT4_GROUP,
                                                       self.scales_and_zeros).float()  # (R, N)
        return y if self.bias is None else y + self.bias
