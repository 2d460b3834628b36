"""The per-layer transcoder: it reads what an FFN reads and writes what it writes, through a few active features.

circuit-tracer's conventions (its SingleLayerTranscoder), so its files and ours are the same thing
(model_core.features.transcoder_format):
    pre  = x @ W_enc.T + b_enc           x = the FFN's input (blocks.L.ln2.hook_normalized)  W_enc [d_tc, d_model]
    acts = TopK(pre)                     the k largest pre-activations kept as they are, the rest 0
    ŷ    = acts @ W_dec + b_dec (+ x @ W_skip.T)                   W_dec [d_tc, d_model], W_skip [d_model, d_model]
ŷ stands in for the FFN's output (blocks.L.hook_mlp_out). Decoder rows W_dec[i] are kept at unit norm, so feature
i's activation is how much of its direction it writes. TopK keeps negative values as circuit-tracer's does: 0.6-2.8 %
of the shipped set's active values are negative (small ones), and they are nodes of a graph like the others."""
from dataclasses import asdict, dataclass, field

import torch
import torch.nn as nn

from model_core.analysis.replacement import INPUT_HOOK, OUTPUT_HOOK, check_model, hook_names  # noqa: F401 (re-exported)
from model_core.features.sae import SAEConfigError, UnitDecoder


@dataclass
class TranscoderConfig:
    d_model: int
    d_transcoder: int  # features
    k: int  # active features per position
    layer: int
    skip: bool = False  # a linear skip connection x @ W_skip.T beside the features
    extra: dict = field(default_factory=dict)  # training settings, evaluation, corpus

    # read as an SAE's config by the shared trainer and the feature statistics (model_core.features.dashboard)
    @property
    def d_in(self) -> int:
        return self.d_model

    @property
    def d_sae(self) -> int:
        return self.d_transcoder

    @property
    def hook_name(self) -> str:
        return hook_names(self.layer)[0]

    def validate(self) -> "TranscoderConfig":
        for name in ("d_model", "d_transcoder"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SAEConfigError(f"{name} must be a whole number of at least 1, got {value!r}.")
        if not (isinstance(self.k, int) and 1 <= self.k <= self.d_transcoder):
            raise SAEConfigError(f"k must be a whole number from 1 to the number of features ({self.d_transcoder}), "
                                 f"got {self.k!r}.")
        return self

    def to_dict(self) -> dict:
        return asdict(self)


def top_k(pre: torch.Tensor, k: int) -> torch.Tensor:
    """pre [..., d_tc] -> the k largest of each row kept as they are, the others 0 (circuit-tracer's TopK)."""
    top = pre.topk(k, dim=-1, sorted=False)
    return torch.zeros_like(pre).scatter(-1, top.indices, top.values)


class Transcoder(UnitDecoder, nn.Module):
    """Encoder, TopK, decoder, optional skip (see the module docstring)."""

    def __init__(self, cfg: TranscoderConfig):
        super().__init__()
        self.cfg = cfg.validate()
        direction = torch.randn(cfg.d_transcoder, cfg.d_model)
        self.W_dec = nn.Parameter(direction / direction.norm(dim=-1, keepdim=True))  # [d_tc, d_model] unit rows
        self.W_enc = nn.Parameter(self.W_dec.detach().clone())  # [d_tc, d_model]
        self.b_enc = nn.Parameter(torch.zeros(cfg.d_transcoder))  # [d_tc]
        self.b_dec = nn.Parameter(torch.zeros(cfg.d_model))  # [d_model]
        self.W_skip = nn.Parameter(torch.zeros(cfg.d_model, cfg.d_model)) if cfg.skip else None  # [d_model, d_model]

    def pre_activations(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., d_model] -> [..., d_tc]."""
        return x @ self.W_enc.T + self.b_enc

    def activate(self, pre: torch.Tensor) -> torch.Tensor:
        return top_k(pre, self.cfg.k)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., d_model] -> feature activations [..., d_tc], k non-zero per row."""
        return self.activate(self.pre_activations(x))

    def skip(self, x: torch.Tensor) -> torch.Tensor:
        """The skip connection's part of the output [..., d_model] (zeros without one)."""
        return x @ self.W_skip.T if self.W_skip is not None else torch.zeros_like(x)

    def decode(self, acts: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """acts [..., d_tc] and the input x [..., d_model] -> the FFN output's stand-in [..., d_model]."""
        return acts @ self.W_dec + self.b_dec + self.skip(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x), x)

    @property
    def n_features(self) -> int:
        return self.cfg.d_transcoder
