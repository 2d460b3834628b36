"""Direct logit attribution: the final residual stream is a sum of what the embeddings, every head and every
MLP layer wrote, so a token's logit splits into one part per writer.

    logit_t = unembed(norm(x)) = (norm scale * gain * centred x) . W_U[t] + biases

The final norm is not linear (its scale depends on x); as usual (TransformerLens) the scale is frozen at the
value the real run had, which makes the split exact: the parts sum to the logit. A head's part is its output
through its own slice of W_O; the attention output biases, the final norm's bias and the unembedding bias
form one "bias" part. Post-norm models renormalise the stream inside every block, so their final stream is
not a sum of parts: they are refused with a sentence."""
import functools
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch


class AttributionError(ValueError):
    """The model or the request does not allow an attribution; the message says why."""


@dataclass
class Attribution:
    position: int  # the query position whose prediction is split
    target: int  # the token whose logit is split
    baseline: Optional[int]  # None, or the token whose logit is subtracted (a logit difference)
    embed: float  # token embeddings (+ position vectors)
    heads: np.ndarray  # [L, H]
    mlps: Optional[np.ndarray]  # [L], None for attention-only models
    bias: float  # attention output biases + final norm bias + unembedding bias
    logit: float  # the model's own logit (difference), to compare with the sum of the parts

    @property
    def total(self) -> float:
        """The sum of the parts: equals .logit up to float error."""
        mlps = float(self.mlps.sum()) if self.mlps is not None else 0.0
        return self.embed + float(self.heads.sum()) + mlps + self.bias

    def per_layer(self) -> np.ndarray:
        """[L] attention (all heads) + MLP of each layer."""
        return self.heads.sum(1) + (self.mlps if self.mlps is not None else 0.0)

    def top_head(self) -> tuple[int, int]:
        """(layer, head) with the largest part by size."""
        layer, head = np.unravel_index(np.abs(self.heads).argmax(), self.heads.shape)
        return int(layer), int(head)


ATTRIBUTION_HOOKS = ("hook_embed", "hook_pos_embed", "attn.hook_z", "hook_mlp_out", "attn.hook_pattern",
                     "attn.hook_v")


@torch.no_grad()
def logit_attribution(model, ids: list[int], position: int = -1, target: Optional[int] = None,
                      baseline: Optional[int] = None) -> tuple[Attribution, "AttributionRun"]:
    """Split the logit of target (default: the model's top token) at position, minus baseline's if given."""
    cfg = model.cfg
    if cfg.norm_placement == "post":
        raise AttributionError("this model normalises the residual stream after every block (post-norm), so the "
                               "final stream is not a sum of what each part wrote: direct logit attribution "
                               "needs a pre-norm model.")
    T = len(ids)
    if T == 0:
        raise AttributionError("the prompt is empty: type at least one token.")
    if not -T <= position < T:
        raise AttributionError(f"position must be between 0 and {T - 1} for this {T}-token prompt.")
    position %= T
    for token in (target, baseline):
        if token is not None and not 0 <= token < cfg.vocab_size:
            raise AttributionError(f"token id {token} is outside the vocabulary (0 to {cfg.vocab_size - 1}).")
    was_training = model.training
    model.eval()
    try:
        logits, cache = model.run_with_cache(torch.tensor([ids]),
                                             names_filter=lambda n: n.endswith(ATTRIBUTION_HOOKS))
    finally:
        model.train(was_training)
    run = AttributionRun(model, cache, logits[0], position)
    target = int(logits[0, position].argmax()) if target is None else target
    return run.attribution(target, baseline), run


class AttributionRun:
    """One prompt's cached run, read at one position: the parts as residual-stream vectors, and the direction
    in that stream that a logit (difference) reads."""

    def __init__(self, model, cache, logits: torch.Tensor, position: int):
        self.model, self.cache, self.logits, self.position = model, cache, logits, position
        self.cfg = model.cfg

    @torch.no_grad()
    def direction(self, target: int, baseline: Optional[int]) -> tuple[torch.Tensor, float]:
        """(w [D], b): logit(target) - logit(baseline) = w . (scale * centred x) + b, in float64."""
        W_U, b_U = self.model.unembed.weight.double(), self.model.unembed.bias  # (V, D), (V,) or None
        w = W_U[target] - (W_U[baseline] if baseline is not None else 0.0)  # (D,)
        b = 0.0 if b_U is None else float(b_U[target] - (b_U[baseline] if baseline is not None else 0.0))
        norm = self.model.ln_final.norm
        if getattr(norm, "bias", None) is not None:
            b += float(norm.bias.double() @ w)
        if getattr(norm, "weight", None) is not None:
            w = w * norm.weight.double()
        return w, b

    def centred(self, v: torch.Tensor) -> torch.Tensor:
        """What the final norm does to one part before scaling: LayerNorm subtracts the mean, RMSNorm nothing."""
        return v - v.mean(-1, keepdim=True) if isinstance(self.model.ln_final.norm, torch.nn.LayerNorm) else v

    @torch.no_grad()
    def head_vectors(self, layer: int) -> torch.Tensor:
        """[H, D] each head's output at the position through its slice of W_O (float64)."""
        H, dh = self.cfg.n_heads, self.cfg.d_head
        z = self.cache["z", layer][0, self.position].double()  # (H, dh)
        W_O = self.model.blocks[layer].attn.W_o.weight.double().view(self.cfg.d_model, H, dh)  # (D, H, dh)
        return torch.einsum("hd,Dhd->hD", z, W_O)

    @functools.cached_property
    @torch.no_grad()
    def parts(self) -> dict:
        """The stream at the position as parts (float64 vectors [D]): embed, heads [L, H, D], mlps [L, D], bias."""
        p, cfg = self.position, self.cfg
        embed = self.cache["hook_embed"][0, p].double()
        if "hook_pos_embed" in self.cache:
            embed = embed + self.cache["hook_pos_embed"][0, p].double()
        heads = torch.stack([self.head_vectors(layer) for layer in range(cfg.n_layers)])  # (L, H, D)
        mlps = None if cfg.attn_only else torch.stack([self.cache["mlp_out", layer][0, p].double()
                                                       for layer in range(cfg.n_layers)])  # (L, D)
        bias = torch.zeros(cfg.d_model, dtype=torch.float64)
        for block in self.model.blocks:
            if block.attn.W_o.bias is not None:
                bias = bias + block.attn.W_o.bias.double()
        return {"embed": embed, "heads": heads, "mlps": mlps, "bias": bias}

    @functools.cached_property
    @torch.no_grad()
    def scale(self) -> float:
        """The final norm's scale on the real stream at the position (frozen: what makes the split linear)."""
        parts = self.parts
        stream = parts["embed"] + parts["heads"].sum((0, 1)) + parts["bias"]
        if parts["mlps"] is not None:
            stream = stream + parts["mlps"].sum(0)
        norm = self.model.ln_final.norm
        if isinstance(norm, torch.nn.LayerNorm):
            return float(1.0 / torch.sqrt(stream.var(unbiased=False) + norm.eps))
        if isinstance(norm, torch.nn.RMSNorm):
            return float(1.0 / torch.sqrt(stream.square().mean() + norm.eps))
        return 1.0

    def read(self, v: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """A part's (or parts' [..., D]) share of the logit along direction w."""
        return (self.centred(v) * self.scale) @ w

    @torch.no_grad()
    def attribution(self, target: int, baseline: Optional[int] = None) -> Attribution:
        parts, (w, b) = self.parts, self.direction(target, baseline)
        logit = self.logits[self.position, target] - (self.logits[self.position, baseline] if baseline is not None
                                                        else 0.0)
        return Attribution(
            self.position, target, baseline, embed=float(self.read(parts["embed"], w)),
            heads=self.read(parts["heads"], w).numpy(),
            mlps=None if parts["mlps"] is None else self.read(parts["mlps"], w).numpy(),
            bias=float(self.read(parts["bias"], w)) + b, logit=float(logit))

    @torch.no_grad()
    def head_by_source(self, layer: int, head: int, target: int, baseline: Optional[int] = None) -> np.ndarray:
        """[position + 1] the head's part split by the key position it read from: attention weight times that
        position's value, through W_O. Sums to the head's part."""
        cfg, p = self.cfg, self.position
        pattern = self.cache["pattern", layer][0, head, p, : p + 1].double()  # (p+1,)
        kv_head = head // (cfg.n_heads // cfg.kv_heads)
        v = self.cache["v", layer][0, : p + 1, kv_head].double()  # (p+1, dh)
        W_O = self.model.blocks[layer].attn.W_o.weight.double().view(cfg.d_model, cfg.n_heads, cfg.d_head)
        out = (pattern[:, None] * v) @ W_O[:, head].T  # (p+1, D)
        return self.read(out, self.direction(target, baseline)[0]).numpy()
