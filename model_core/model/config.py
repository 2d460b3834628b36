"""GPTConfig: the flat, validated description of a decoder-only transformer."""
from dataclasses import asdict, dataclass, fields
from typing import Optional

ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "relu2", "swiglu")
NORMS = ("layernorm", "rmsnorm", "none")
NORM_PLACEMENTS = ("pre", "post")
POSITIONALS = ("learned", "sinusoidal", "rope", "none")
POSITION_VECTORS = ("learned", "sinusoidal")  # the positionals that add a vector to the residual stream
INITS = ("gpt2", "1/sqrt(d_model)")


class ConfigError(ValueError):
    """A configuration value is invalid; the message says what and how to fix it."""


@dataclass
class GPTConfig:
    vocab_size: int = 65  # number of distinct tokens
    block_size: int = 64  # longest context the model can attend over
    d_model: int = 128  # width of the residual stream
    n_heads: int = 4  # attention (query) heads per layer; d_head = d_model // n_heads
    # key/value heads per layer; None: n_heads. Fewer is grouped-query attention (Llama, SmolLM2): each
    # key/value head serves n_heads // n_kv_heads consecutive query heads
    n_kv_heads: Optional[int] = None
    n_layers: int = 4  # number of transformer blocks
    d_mlp: Optional[int] = None  # FFN hidden width; None: 4*d_model (8/3*d_model for swiglu)
    # FFN non-linearity: gelu | gelu_tanh (GPT-2's approximation) | relu | relu2 (relu squared) | swiglu
    activation: str = "gelu"
    norm: str = "layernorm"  # layernorm | rmsnorm | none (seed 002 has no norm at all)
    norm_placement: str = "pre"  # pre: x + f(norm(x)) (GPT-2); post: norm(x + f(x)) (2017 paper)
    norm_eps: float = 1e-5  # added to the variance (mean square for rmsnorm) before the square root
    # attention and FFN read the same input and both add to the stream: x + attn(ln1(x)) + mlp(ln2(x)) (GPT-NeoX)
    parallel_blocks: bool = False
    # learned table | fixed sinusoidal vectors | rope (rotary: rotate q and k by position) | none (only the
    # causal mask tells positions apart)
    positional: str = "learned"
    rope_base: float = 10000.0  # rope: pair m of a head turns rope_base**(-2m / rotary_dims) radians per position
    rotary_dims: Optional[int] = None  # rope: rotate the first rotary_dims of each head (Pythia: d_head / 4); None: all
    qk_norm: bool = False  # RMSNorm on each head's q and k before the dot product (keeps scores bounded)
    tie_weights: bool = True  # unembedding shares the token embedding matrix
    attn_only: bool = False  # blocks without FFN (StatQuest seed)
    dropout: float = 0.0  # dropout on attention weights and residual updates while training
    bias: bool = True  # biases in linear layers and LayerNorm
    qkv_bias: Optional[bool] = None  # biases on q, k and v; None: as bias (Qwen2 has them with bias=False)
    unembed_bias: Optional[bool] = None  # a bias on the logits; None: bias and not tie_weights (nanoGPT's rule)
    # how training starts the weights (biases start at 0): gpt2: N(0, 0.02²), the residual projections divided by
    # sqrt(2 n_layers); 1/sqrt(d_model): every matrix and embedding N(0, 1/d_model), about 4x gpt2's at d_model 128
    # (Nanda et al.'s grokking model: the larger start memorises first and generalises later)
    init: str = "gpt2"

    def __post_init__(self):
        self.validate()
        if self.d_mlp is None:
            self.d_mlp = int(8 * self.d_model / 3) if self.activation == "swiglu" else 4 * self.d_model

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """Key/value heads per layer (n_heads unless grouped-query attention)."""
        return self.n_kv_heads or self.n_heads

    @property
    def rotated_dims(self) -> int:
        """Dimensions of each head that rope rotates."""
        return self.rotary_dims or self.d_head

    @property
    def has_qkv_bias(self) -> bool:
        return self.bias if self.qkv_bias is None else self.qkv_bias

    @property
    def has_unembed_bias(self) -> bool:
        return (self.bias and not self.tie_weights) if self.unembed_bias is None else self.unembed_bias

    @property
    def has_position_vectors(self) -> bool:
        """True when a position vector is added to each token's embedding (learned or sinusoidal)."""
        return self.positional in POSITION_VECTORS

    def validate(self) -> None:
        """Raise ConfigError naming the first invalid field and how to fix it."""
        for name in ("vocab_size", "block_size", "d_model", "n_heads", "n_layers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive whole number, got {value!r}.")
        if self.d_model % self.n_heads:
            lower = max(h for h in range(1, self.n_heads + 1) if self.d_model % h == 0)
            raise ConfigError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}): "
                f"use n_heads={lower} or a d_model that is a multiple of {self.n_heads}."
            )
        kv = self.n_kv_heads
        if kv is not None and (isinstance(kv, bool) or not isinstance(kv, int) or kv < 1 or self.n_heads % kv):
            raise ConfigError(f"n_kv_heads must be a whole number that divides n_heads ({self.n_heads}) or None, "
                              f"got {kv!r}: each key/value head serves the same number of query heads.")
        if self.d_mlp is not None and (isinstance(self.d_mlp, bool) or not isinstance(self.d_mlp, int) or self.d_mlp < 1):
            raise ConfigError(f"d_mlp must be a positive whole number or None (automatic), got {self.d_mlp!r}.")
        _check_choice("activation", self.activation, ACTIVATIONS)
        _check_choice("norm", self.norm, NORMS)
        _check_choice("norm_placement", self.norm_placement, NORM_PLACEMENTS)
        _check_choice("positional", self.positional, POSITIONALS)
        _check_choice("init", self.init, INITS)
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ConfigError(f"sinusoidal positions need an even d_model, got {self.d_model}: use {self.d_model + 1}.")
        if self.positional == "rope" and self.d_head % 2:
            raise ConfigError(
                f"rope rotates pairs of dimensions, so d_head (d_model / n_heads = {self.d_head}) must be even: "
                f"use d_model={self.n_heads * (self.d_head + 1)} or positional='learned'."
            )
        if self.rotary_dims is not None and (isinstance(self.rotary_dims, bool) or not isinstance(self.rotary_dims, int)
                                             or self.rotary_dims < 2 or self.rotary_dims % 2
                                             or self.rotary_dims > self.d_head):
            raise ConfigError(f"rotary_dims must be an even whole number from 2 to d_head ({self.d_head}) or None, "
                              f"got {self.rotary_dims!r}.")
        for name in ("rope_base", "norm_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{name} must be a positive number, got {value!r}.")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout!r}: 0.0 to 0.2 is typical.")
        for name in ("tie_weights", "attn_only", "bias", "qk_norm", "parallel_blocks"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}.")
        for name in ("qkv_bias", "unembed_bias"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true, false or None (automatic), got {getattr(self, name)!r}.")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "GPTConfig":
        """Rebuild from a plain dict; unknown keys are an error, not silently dropped."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown model config keys {unknown}; known keys are {sorted(known)}.")
        return cls(**d)


def _check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}; got {value!r}.")
