"""The sparse autoencoder: activations x [.., d_in] -> a few active features [.., d_sae] -> reconstruction.

SAELens's conventions, so its files and ours are the same thing (model_core.features.saelens_format):
    pre  = (x - b_dec) @ W_enc + b_enc          W_enc [d_in, d_sae], b_enc [d_sae]
    acts = relu(pre)            ("standard", trained with an L1 penalty)
         | relu(top k of pre)   ("topk": the k largest pre-activations of each position, the rest 0)
    x̂    = acts @ W_dec + b_dec                 W_dec [d_sae, d_in], b_dec [d_in]
Each decoder row W_dec[i] is feature i's direction in the activation space, kept at unit norm, so a
feature's activation is how much of that direction the reconstruction holds."""
from dataclasses import asdict, dataclass, field
from typing import Optional

import torch
import torch.nn as nn

ARCHITECTURES = ("topk", "standard")


class SAEConfigError(ValueError):
    """An SAE setting that cannot work; the message says what to change."""


@dataclass
class SAEConfig:
    d_in: int  # width of the activation it reads (d_model for the residual stream, d_mlp for mlp.hook_post)
    d_sae: int  # number of features (the dictionary's size; 4-16 x d_in is usual)
    architecture: str = "topk"  # "topk" (exactly k features per position) or "standard" (ReLU + L1)
    k: int = 32  # topk: active features per position
    hook_name: str = ""  # TransformerLens-style hook point it reads, e.g. "blocks.2.hook_resid_post"
    model_name: str = ""  # which model it was trained on (free text, shown to users)
    apply_b_dec_to_input: bool = True  # subtract b_dec before encoding (SAELens's default; some files say no)
    extra: dict = field(default_factory=dict)  # anything else worth keeping (training settings, corpus, ...)

    def validate(self) -> "SAEConfig":
        if self.architecture not in ARCHITECTURES:
            raise SAEConfigError(f"architecture must be one of {', '.join(ARCHITECTURES)}, got {self.architecture!r}.")
        for name in ("d_in", "d_sae"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SAEConfigError(f"{name} must be a whole number of at least 1, got {value!r}.")
        if self.architecture == "topk" and not (isinstance(self.k, int) and 1 <= self.k <= self.d_sae):
            raise SAEConfigError(f"k must be a whole number from 1 to the number of features ({self.d_sae}), "
                                 f"got {self.k!r}.")
        return self

    def to_dict(self) -> dict:
        return asdict(self)


class UnitDecoder:
    """Decoder rows W_dec [features, width] kept at unit norm while training (SAEs and transcoders)."""

    @torch.no_grad()
    def normalize_decoder_(self) -> None:
        """Scale every decoder row back to unit norm (training keeps them there)."""
        self.W_dec.div_(self.W_dec.norm(dim=-1, keepdim=True).clamp_min(1e-8))

    @torch.no_grad()
    def remove_parallel_gradient_(self) -> None:
        """Drop the part of W_dec's gradient along each row: a step then turns a row rather than stretching
        it, so renormalising after the step undoes little (Bricken et al. 2023)."""
        if self.W_dec.grad is None:
            return
        along = (self.W_dec.grad * self.W_dec).sum(dim=-1, keepdim=True)  # [d_sae, 1]
        self.W_dec.grad.sub_(along * self.W_dec)


class SparseAutoencoder(UnitDecoder, nn.Module):
    """Encoder, sparse activation, decoder (see the module docstring for the formulas)."""

    def __init__(self, cfg: SAEConfig):
        super().__init__()
        self.cfg = cfg.validate()
        direction = torch.randn(cfg.d_sae, cfg.d_in)
        self.W_dec = nn.Parameter(direction / direction.norm(dim=-1, keepdim=True))  # [d_sae, d_in] unit rows
        self.W_enc = nn.Parameter(self.W_dec.detach().T.clone())  # [d_in, d_sae]: starts as the decoder's transpose
        self.b_enc = nn.Parameter(torch.zeros(cfg.d_sae))  # [d_sae]
        self.b_dec = nn.Parameter(torch.zeros(cfg.d_in))  # [d_in]: set from the data before training

    def pre_activations(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., d_in] -> [..., d_sae] before the sparse non-linearity."""
        centred = x - self.b_dec if self.cfg.apply_b_dec_to_input else x
        return centred @ self.W_enc + self.b_enc

    def activate(self, pre: torch.Tensor) -> torch.Tensor:
        """pre-activations [..., d_sae] -> feature activations [..., d_sae], mostly zeros."""
        if self.cfg.architecture == "standard":
            return torch.relu(pre)
        top = pre.topk(self.cfg.k, dim=-1, sorted=False)
        return torch.zeros_like(pre).scatter(-1, top.indices, torch.relu(top.values))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., d_in] -> feature activations [..., d_sae]."""
        return self.activate(self.pre_activations(x))

    def decode(self, acts: torch.Tensor) -> torch.Tensor:
        """feature activations [..., d_sae] -> reconstruction [..., d_in]."""
        return acts @ self.W_dec + self.b_dec

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))

    def direction(self, feature: int) -> torch.Tensor:
        """Feature's decoder direction [d_in] (unit norm)."""
        return self.W_dec[feature]

    @property
    def n_features(self) -> int:
        return self.cfg.d_sae

    def describe(self) -> str:
        kind = f"TopK, k = {self.cfg.k}" if self.cfg.architecture == "topk" else "ReLU + L1"
        return f"{self.cfg.d_sae:,} features at {self.cfg.hook_name or 'an unnamed hook'} ({kind})"


def sae_from_tensors(cfg: SAEConfig, tensors: dict, source: Optional[str] = None) -> SparseAutoencoder:
    """An SAE with the given weights {W_enc, b_enc, W_dec, b_dec}; SAEConfigError names a wrong shape."""
    sae = SparseAutoencoder(cfg)
    expected = {name: tuple(p.shape) for name, p in sae.named_parameters()}
    where = f" in {source}" if source else ""
    for name, shape in expected.items():
        if name not in tensors:
            raise SAEConfigError(f"no {name}{where}: an SAE file holds W_enc, b_enc, W_dec and b_dec.")
        if tuple(tensors[name].shape) != shape:
            raise SAEConfigError(f"{name}{where} has shape {list(tensors[name].shape)}, but d_in = {cfg.d_in} and "
                                 f"d_sae = {cfg.d_sae} need {list(shape)}.")
    with torch.no_grad():
        for name, p in sae.named_parameters():
            p.copy_(tensors[name].float())
    return sae.eval()
