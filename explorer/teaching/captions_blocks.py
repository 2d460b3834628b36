"""Captions of the Building blocks tab (seed 003): what a norm layer does to the residual stream, and how GELU
differs from ReLU. Pure functions: numbers in, one or two plain sentences out."""
import numpy as np


def norm_effect_caption(before, after, norm_name: str = "LayerNorm", where: str = "") -> str:
    """Values before / after a norm layer [T, D] -> how the overall and per-position spread change."""
    b, a = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    row_std = b.std(axis=-1) if b.ndim == 2 else b.std(keepdims=True)
    text = (f"{norm_name}{f' ({where})' if where else ''} moves the values from mean {b.mean():.2f}, std "
            f"{b.std():.2f} to mean {a.mean():.2f}, std {a.std():.2f}.")
    if b.ndim == 2 and b.shape[0] > 1:
        text += (f" Before it, the positions' spreads range from {row_std.min():.2f} to {row_std.max():.2f}; after "
                 "it every position is rescaled to a similar size, so the next layer sees inputs it can rely on.")
    if norm_name == "LayerNorm" and (abs(a.mean()) > 0.05 or abs(a.std() - 1) > 0.05):  # a trained gain and bias
        text += (" Why not exactly mean 0, std 1: LayerNorm first brings each position's vector to mean 0 and std 1, "
                 "then multiplies by its learned gain and adds its learned bias, one number per dimension, which "
                 "training has moved away from 1 and 0.")
    return text


def activation_caption(curves: dict, x, model_activation: str = "") -> str:
    """{name: outputs at x} for ReLU and GELU -> where they differ most, and which one this model uses."""
    x = np.asarray(x, dtype=np.float64)
    relu, gelu = np.asarray(curves["ReLU"]), np.asarray(curves["GELU"])
    gap = np.abs(gelu - relu)
    worst = int(np.argmax(gap))
    close = x[(x > 0) & (gap < 0.01)]
    text = (f"ReLU and GELU differ most around x = ±{abs(x[worst]):.2f}, by {gap[worst]:.2f}: GELU bends smoothly "
            f"at 0 and lets small negative inputs through (its lowest output is {gelu.min():.2f})")
    text += f", and above x = {close.min():.1f} the two agree within 0.01." if close.size else "."
    return text + (f" This model uses {model_activation}." if model_activation else "")
