"""Rotary position embedding (RoPE): each head's q and k rotated by an angle that grows with position.

The dot product of a rotated q at position i and a rotated k at position j depends only on i - j, so
attention sees relative positions and no position vector is ever added to the residual stream.
Pairs are (dim m, dim m + d_head/2), the GPT-NeoX layout TransformerLens uses by default."""
import torch
import torch.nn as nn

ROPE_BASE = 10000.0  # the angle of pair m turns at base**(-2m / d_head) radians per position


class Rotary(nn.Module):
    """Holds the cos/sin tables (recomputed on build, never saved) and applies the rotation."""

    def __init__(self, block_size: int, d_head: int):
        super().__init__()
        half = d_head // 2
        freqs = ROPE_BASE ** (-torch.arange(half, dtype=torch.float32) / half)  # (dh/2,)
        angles = torch.outer(torch.arange(block_size, dtype=torch.float32), freqs)  # (block, dh/2)
        self.register_buffer("cos", angles.cos()[:, None, :], persistent=False)  # (block, 1, dh/2)
        self.register_buffer("sin", angles.sin()[:, None, :], persistent=False)  # (block, 1, dh/2)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x (B, T, H, dh) at positions start..start+T-1 -> x with the pair at position t rotated by t * freq."""
        T = x.size(1)
        cos, sin = self.cos[start:start + T].to(x.dtype), self.sin[start:start + T].to(x.dtype)  # (T, 1, dh/2)
        x1, x2 = x.chunk(2, dim=-1)  # 2 x (B, T, H, dh/2)
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (B, T, H, dh)
