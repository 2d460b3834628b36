"""The local replacement model of one prompt (Ameisen et al. 2025, "Circuit Tracing"): the model's own forward pass
with every attention pattern and every norm's denominator frozen at their values on the prompt, and each FFN's
output split into its transcoder's features, an error (what the transcoder missed) and constants. Everything in it
is then linear in the residual stream, so a node's effect on a later one is a product of matrices.

`cached_pass` runs the real model once and keeps what is frozen; `frozen_forward` recomputes the stream from the
token embeddings and the FFN outputs, as a differentiable function of both, and equals the real pass on the
real inputs. Shapes: T positions, D d_model, H heads, dh d_head, L layers."""
from dataclasses import dataclass

import torch

INPUT_HOOK = "ln2.hook_normalized"  # inside block L: the FFN's input, after the norm (TransformerLens's name too)
OUTPUT_HOOK = "hook_mlp_out"  # the FFN's output, added to the residual stream


class ReplacementError(ValueError):
    """A model the replacement model cannot be built for; the message says why."""


def hook_names(layer: int) -> tuple[str, str]:
    """(input hook, output hook) of block layer's FFN, as the model names them."""
    return f"blocks.{layer}.{INPUT_HOOK}", f"blocks.{layer}.{OUTPUT_HOOK}"


def check_model(cfg) -> None:
    """Transcoders replace a pre-norm model's FFNs: ReplacementError says why another model cannot have them."""
    if cfg.attn_only:
        raise ReplacementError("this model has no FFN blocks, so there is nothing for transcoders to replace.")
    if cfg.norm_placement != "pre" or cfg.parallel_blocks:
        raise ReplacementError("transcoders and attribution graphs need a pre-norm model whose FFN reads the stream "
                               "after attention (this one is post-norm or parallel).")



@dataclass
class CachedPass:
    tokens: torch.Tensor  # [T]
    scales: list  # per layer (ln1 [T, 1], ln2 [T, 1]); frozen norm denominators
    final_scale: torch.Tensor  # [T, 1]
    patterns: list  # per layer [H, T, T]
    mlp_in: torch.Tensor  # [L, T, D] each FFN's input (blocks.L.ln2.hook_normalized)
    mlp_out: torch.Tensor  # [L, T, D] each FFN's output
    logits: torch.Tensor  # [T, V]
    position: torch.Tensor  # [T, D] position vectors (zeros for rope and none)
    attn_out: torch.Tensor  # [L, T, D] each attention layer's output
    scores: list  # per layer [H, T, T] scaled q.k before the mask


def norm_scale(norm_module, x: torch.Tensor) -> torch.Tensor:
    """The denominator a norm divides x [T, D] by: [T, 1] (ones for no norm)."""
    inner = norm_module.norm
    if isinstance(inner, torch.nn.LayerNorm):
        return (x.var(-1, unbiased=False, keepdim=True) + inner.eps).sqrt()
    if isinstance(inner, torch.nn.RMSNorm):
        eps = inner.eps if inner.eps is not None else torch.finfo(x.dtype).eps
        return (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    return torch.ones_like(x[..., :1])


def frozen_norm(norm_module, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """norm(x) with its denominator fixed at scale: linear in x, plus the norm's bias. x [..., T, D]."""
    inner = norm_module.norm
    if isinstance(inner, torch.nn.LayerNorm):
        out = (x - x.mean(-1, keepdim=True)) / scale
        out = out * inner.weight if inner.weight is not None else out
        return out + inner.bias if inner.bias is not None else out
    if isinstance(inner, torch.nn.RMSNorm):
        out = x / scale
        return out * inner.weight if inner.weight is not None else out
    return x


@torch.no_grad()
def cached_pass(model, tokens: torch.Tensor) -> CachedPass:
    """One real forward pass of tokens [T], keeping the patterns, norm denominators and FFN inputs and outputs."""
    check_model(model.cfg)
    L = model.cfg.n_layers
    names = [f"blocks.{i}.{part}" for i in range(L) for part in ("hook_resid_pre", "hook_resid_mid",
                                                               "attn.hook_pattern", "hook_attn_out", "attn.hook_attn_scores_unmasked")]
    names += [name for i in range(L) for name in hook_names(i)] + [f"blocks.{L - 1}.hook_resid_post"]
    logits, cache = model.run_with_cache(tokens[None], names_filter=names)
    block = model.blocks
    scales = [(norm_scale(block[i].ln1, cache[f"blocks.{i}.hook_resid_pre"][0]),
               norm_scale(block[i].ln2, cache[f"blocks.{i}.hook_resid_mid"][0])) for i in range(L)]
    final = cache[f"blocks.{L - 1}.hook_resid_post"][0]
    return CachedPass(tokens, scales, norm_scale(model.ln_final, final),
                      [cache[f"blocks.{i}.attn.hook_pattern"][0] for i in range(L)],
                      torch.stack([cache[hook_names(i)[0]][0] for i in range(L)]),
                      torch.stack([cache[hook_names(i)[1]][0] for i in range(L)]), logits[0],
                      model.position_embeddings(len(tokens)).detach(),
                      torch.stack([cache[f"blocks.{i}.hook_attn_out"][0] for i in range(L)]),
                      [cache[f"blocks.{i}.attn.hook_attn_scores_unmasked"][0] for i in range(L)])


def value_weights(attn) -> tuple[torch.Tensor, torch.Tensor]:
    """(W_v [Hkv * dh, D], b_v [Hkv * dh] or zeros) from the fused qkv projection."""
    H, Hkv, dh = attn.n_heads, attn.n_kv, attn.d_head
    rows = slice((H + Hkv) * dh, (H + 2 * Hkv) * dh)
    bias = attn.W_qkv.bias[rows] if attn.W_qkv.bias is not None else torch.zeros(Hkv * dh)
    return attn.W_qkv.weight[rows], bias


def frozen_attention(attn, h: torch.Tensor, pattern: torch.Tensor) -> torch.Tensor:
    """Attention with its pattern fixed: h [B, T, D] normalised stream, pattern [H, T, T] -> [B, T, D]."""
    B, T, D = h.shape
    H, Hkv, dh = attn.n_heads, attn.n_kv, attn.d_head
    W_v, b_v = value_weights(attn)
    v = (h @ W_v.T + b_v).view(B, T, Hkv, dh).transpose(1, 2)  # [B, Hkv, T, dh]
    v = v.repeat_interleave(H // Hkv, dim=1)  # [B, H, T, dh]
    z = (pattern @ v).transpose(1, 2).reshape(B, T, H * dh)  # [B, T, D]
    return attn.W_o(z)


def frozen_forward(model, run: CachedPass, transcoders: list, token_vectors: torch.Tensor,
                   ffn_rest: torch.Tensor, layers: int = None) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The replacement model's stream, linear in its inputs: token_vectors [B, T, D] (the token embeddings),
    ffn_rest [B, L, T, D] (each FFN's output less its transcoder's skip part, which is recomputed from the stream
    here). -> (each layer's FFN input [B, T, D], the final norm's output [B, T, D]); with layers < L only the
    first layers' FFN inputs (and no final output: None)."""
    x = token_vectors + run.position  # [B, T, D]
    mlp_in = []
    L = len(model.blocks)
    for i, block in enumerate(model.blocks[:layers if layers is not None else L]):
        s1, s2 = run.scales[i]
        x = x + frozen_attention(block.attn, frozen_norm(block.ln1, x, s1), run.patterns[i])
        m = frozen_norm(block.ln2, x, s2)  # [B, T, D]
        mlp_in.append(m)
        if i + 1 == layers and layers < L:
            return mlp_in, None
        x = x + ffn_rest[:, i] + transcoders[i].skip(m)
    return mlp_in, frozen_norm(model.ln_final, x, run.final_scale)
