"""Rotary position embedding (RoPE): each head's q and k rotated by an angle that grows with position.

The dot product of a rotated q at position i and a rotated k at position j depends only on i - j, so
attention sees relative positions and no position vector is ever added to the residual stream.
Pairs are (dim m, dim m + d_head/2), the GPT-NeoX layout TransformerLens uses by default."""
import torch
import torch.nn as nn

ROPE_BASE = 10000.0  # the default base: pair m turns at base**(-2m / rotated dims) radians per position


class Rotary(nn.Module):
    """Holds the cos/sin tables (recomputed on build, never saved) and rotates the first `dims` dimensions of
    each head (all of them unless partial rotary, as in Pythia); the rest pass through unchanged."""

    def __init__(self, block_size: int, dims: int, base: float = ROPE_BASE):
        super().__init__()
        half = dims // 2
        self.dims = dims
        # the tables are made on the CPU even when the model is built on the meta device (GPT.with_weights)
        freqs = base ** (-torch.arange(half, dtype=torch.float32, device="cpu") / half)  # (dims/2,)
        angles = torch.outer(torch.arange(block_size, dtype=torch.float32, device="cpu"), freqs)  # (block, dims/2)
        self.register_buffer("cos", angles.cos()[:, None, :], persistent=False)  # (block, 1, dims/2)
        self.register_buffer("sin", angles.sin()[:, None, :], persistent=False)  # (block, 1, dims/2)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x (B, T, H, dh) at positions start..start+T-1 -> x with the pair at position t rotated by t * freq."""
        T = x.size(1)
        cos, sin = self.cos[start:start + T].to(x.dtype), self.sin[start:start + T].to(x.dtype)  # (T, 1, dims/2)
        rot, rest = x[..., :self.dims], x[..., self.dims:]  # (B, T, H, dims), (B, T, H, dh - dims)
        x1, x2 = rot.chunk(2, dim=-1)  # 2 x (B, T, H, dims/2)
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos, rest), dim=-1)  # (B, T, H, dh)
