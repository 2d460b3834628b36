"""TransformerLens's own computation of composition scores and OV eigenvalues, for tests/test_circuits.py.

TransformerLens 4 computes `all_composition_scores` on a TransformerBridge around a Hugging Face model; its body
is FactoredMatrix + utils.composition_scores on the stacked W_V, W_O, W_Q, W_K after the weight processing of
`enable_compatibility_mode()` (ProcessWeights.process_weights: fold_ln, center_writing_weights, center_unembed).
Here our model's weights are laid out as its state dict and the same functions run on them."""
import types

import torch


def tl_state_dict(model):
    """Our GPT's weights in TransformerLens's layout ([head, d_model, d_head] etc.), and a config for them."""
    cfg = model.cfg
    H, Hkv, dh, D = cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.d_model
    sd = {"embed.W_E": model.embed.weight.detach().clone(), "unembed.W_U": model.unembed.weight.detach().T.clone()}
    if cfg.positional == "learned":
        sd["pos_embed.W_pos"] = model.pos_embed.weight.detach().clone()
    g = "_" if Hkv != H else ""
    for layer, block in enumerate(model.blocks):
        q, k, v = block.attn.W_qkv.weight.detach().view(H + 2 * Hkv, dh, D).split((H, Hkv, Hkv))
        p = f"blocks.{layer}."
        sd[p + "attn.W_Q"], sd[p + f"attn.{g}W_K"], sd[p + f"attn.{g}W_V"] = (t.transpose(1, 2).clone() for t in (q, k, v))
        sd[p + "attn.b_Q"], sd[p + f"attn.{g}b_K"], sd[p + f"attn.{g}b_V"] = (torch.zeros(n, dh) for n in (H, Hkv, Hkv))
        sd[p + "attn.W_O"] = block.attn.W_o.weight.detach().view(D, H, dh).permute(1, 2, 0).clone()
        sd[p + "attn.b_O"] = torch.zeros(D)
        if cfg.norm != "none":
            sd[p + "ln1.w"] = block.ln1.norm.weight.detach().clone()
            if cfg.norm == "layernorm":
                sd[p + "ln1.b"] = torch.zeros(D)
    if cfg.norm != "none":
        sd["ln_final.w"] = model.ln_final.norm.weight.detach().clone()
        if cfg.norm == "layernorm":
            sd["ln_final.b"] = torch.zeros(D)
    tl_cfg = types.SimpleNamespace(
        n_layers=cfg.n_layers, n_heads=H, d_model=D, d_head=dh, d_vocab=cfg.vocab_size,
        n_key_value_heads=None if Hkv == H else Hkv,
        normalization_type={"layernorm": "LN", "rmsnorm": "RMS", "none": None}[cfg.norm], final_rms=False,
        attn_only=True, positional_embedding_type="standard" if cfg.positional == "learned" else "rotary",
        rmsnorm_uses_offset=False, gated_mlp=False, act_fn="gelu", d_mlp=None, device="cpu", n_devices=1)
    return sd, tl_cfg


def tl_composition_and_eigenvalues(model):
    """({"q" | "k" | "v": [L, H, L, H]}, OV eigenvalues [L, H, d_head]) as TransformerLens computes them."""
    from transformer_lens.FactoredMatrix import FactoredMatrix
    from transformer_lens.utilities.matrix import composition_scores
    from transformer_lens.weight_processing import ProcessWeights

    sd, tl_cfg = tl_state_dict(model)
    sd = ProcessWeights.process_weights(sd, tl_cfg)
    H, g = tl_cfg.n_heads, "_" if tl_cfg.n_key_value_heads else ""
    stack = lambda name: torch.stack([sd[f"blocks.{i}.attn.{name}"] for i in range(tl_cfg.n_layers)])  # noqa: E731
    W_Q, W_O, W_K, W_V = stack("W_Q"), stack("W_O"), stack(g + "W_K"), stack(g + "W_V")
    if tl_cfg.n_key_value_heads:  # TransformerBridge._expand_kv_heads
        W_K, W_V = (w.repeat_interleave(H // tl_cfg.n_key_value_heads, dim=1) for w in (W_K, W_V))
    left = FactoredMatrix(W_V, W_O)
    rights = {"q": FactoredMatrix(W_Q, W_K.transpose(-2, -1)), "k": FactoredMatrix(W_Q, W_K.transpose(-2, -1)).T,
              "v": left}
    idx = torch.arange(tl_cfg.n_layers)
    mask = idx[:, None, None, None] < idx[None, None, :, None]
    scores = {}
    for kind, right in rights.items():
        s = composition_scores(left, right, broadcast_dims=True)
        scores[kind] = torch.where(mask, s, torch.zeros_like(s))
    # one layer at a time: W_E W_V of every head of SmolLM2 at once would be 3.4 GB
    eigenvalues = [(sd["embed.W_E"] @ FactoredMatrix(W_V[i], W_O[i]) @ sd["unembed.W_U"]).eigenvalues
                   for i in range(tl_cfg.n_layers)]
    return scores, torch.stack(eigenvalues)
