"""What an analysis will cost before it runs, in operations (multiply-adds count 2): rows x tokens x model size.

A forward pass of T tokens through one block costs about 2 x (the block's weights) per token, plus attention,
4 x T x d_model per token (scores and the weighted sum), plus PASS_OVERHEAD per block for the pass itself (a
pass of one token, as a generated token's, costs its ~15 small torch ops more than its arithmetic). SmolLM2's
16-token residual patching sweep is 4.3e11 operations by this count; it took 3.7 s on the two threads of a 2-core
AMD EPYC (AVX2): about 115 billion a second, half that on one thread.
The app refuses a request whose estimate is over its limit (explorer.callbacks.work_budget), before it starts."""
PASS_OVERHEAD = 10_000_000  # operations' worth of time a pass spends per block outside its arithmetic


def block_weights(cfg) -> int:
    """Multiply-add weights of one block (attention and FFN; norms and biases are negligible)."""
    d, q = cfg.d_model, cfg.n_heads * cfg.d_head
    attention = d * q * 2 + 2 * d * cfg.kv_heads * cfg.d_head  # q and out, k and v
    ffn = 0 if cfg.attn_only else (3 if cfg.activation == "swiglu" else 2) * d * cfg.d_mlp
    return attention + ffn


def block_ops(cfg, rows: int, tokens: int, blocks: int = 1, context: int = 0) -> int:
    """Operations of `rows` sequences of `tokens` new tokens, each attending over `context` + tokens positions,
    through `blocks` blocks."""
    per_token = 2 * block_weights(cfg) + 4 * (context + tokens) * cfg.d_model
    return blocks * (rows * tokens * per_token + PASS_OVERHEAD)


def unembed_ops(cfg, positions: int) -> int:
    return 2 * positions * cfg.d_model * cfg.vocab_size


def forward_ops(cfg, rows: int, tokens: int, logits_at: int = -1) -> int:
    """A full forward pass of rows x tokens, unembedding logits_at positions per row (-1: every position)."""
    positions = rows * (tokens if logits_at < 0 else logits_at)
    return block_ops(cfg, rows, tokens, cfg.n_layers) + unembed_ops(cfg, positions)


def patching_ops(cfg, tokens: int, first: int, kind: str, layer: int = 0) -> int:
    """An activation-patching sweep (model_core.analysis.patching) of two prompts of `tokens` tokens that first
    differ at `first`: the two runs, then one row per patch, each from its layer to the last."""
    L, H, moved = cfg.n_layers, cfg.n_heads, max(1, tokens - first)
    total = 2 * forward_ops(cfg, 1, tokens)
    if kind in ("resid_pre", "mlp_out"):  # (tokens - first) rows per layer, each through the layers after it
        total += sum(block_ops(cfg, moved, tokens, L - layer_) for layer_ in range(L))
    elif kind == "z":
        total += sum(block_ops(cfg, H, tokens, L - layer_) for layer_ in range(L))
    else:  # z_pos: heads x positions rows, in one layer
        total += block_ops(cfg, H * moved, tokens, L - layer)
    return total


def generation_ops(cfg, prompt_tokens: int, new_tokens: int) -> int:
    """Generating new_tokens after a prompt with a KV cache: the prompt once, then one token per pass."""
    context = min(cfg.block_size, prompt_tokens + new_tokens)
    one_token = block_ops(cfg, 1, 1, cfg.n_layers, context=context) + unembed_ops(cfg, 1)
    return forward_ops(cfg, 1, min(prompt_tokens, cfg.block_size), logits_at=1) + new_tokens * one_token


def ablation_map_ops(cfg, windows: int, tokens: int) -> int:
    """The exact importance map (model_core.analysis.ablation.importance_map): every head and every MLP layer
    knocked out alone, each a pass over the evaluation windows from its layer on."""
    units_per_layer = cfg.n_heads + (0 if cfg.attn_only else 1)
    passes = sum(units_per_layer * (block_ops(cfg, windows, tokens, cfg.n_layers - layer)
                                    + unembed_ops(cfg, windows * tokens)) for layer in range(cfg.n_layers))
    return forward_ops(cfg, windows, tokens) + passes
