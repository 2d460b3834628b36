"""Counts in sentences: '1 layer', '2 layers'. Every string that puts a number before a noun builds it here, so a
one-layer, one-head model reads '1 layer × 1 head' and never '1 layers × 1 heads'."""


def counted(n: int, noun: str, plural: str = "") -> str:
    """'1 head', '3 heads' (plural: the noun's plural when it is not noun + 's')."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def model_shape(n_layers: int, n_heads: int) -> str:
    """'2 layers × 4 heads' (heads in each layer), '1 layer × 1 head'."""
    return f"{counted(n_layers, 'layer')} × {counted(n_heads, 'head')}"
