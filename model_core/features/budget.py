"""What an SAE run would cost, counted from the settings before anything is allocated: the bytes of its
activation buffer and its seconds (collecting, training, evaluating), so that a server refuses a run it cannot
afford with a sentence that says how long it would take and what fits."""
from dataclasses import dataclass

from model_core.features.activations import check_hook, hook_layer

# Floating-point operations a second per torch thread. Measured: the shipped classroom SAE (1,024 features, k 32,
# 524,288 tokens at blocks.2.hook_resid_post) collected and trained in 27.9 s on 2 idle threads, 3.6e10 a thread
# by the count below; SmolLM2's collection ran at ~2e10. 2.5e10 leaves room for a machine that is not idle.
FLOPS_PER_THREAD = 2.5e10
SAE_FLOPS = 16  # per token, per d_in x d_sae weight: encode and decode (2 each), their backward (4 each), AuxK
ACTIVATION_BYTES = 4  # float32
TOKEN_STEP = 16_384  # token budgets are rounded down to a multiple of this (one collection pass)
DEFAULT_TOKENS = 524_288  # the shipped SAE's budget: what a small model gets by default


class SAEBudgetError(ValueError):
    """An SAE run too large for this server; the message says how long it would take and what fits."""


@dataclass(frozen=True)
class SAEBudget:
    max_seconds: float  # estimated wall time on all `threads`
    max_activation_bytes: int  # the activation buffer (tokens x width x 4 bytes)
    threads: int  # torch threads the estimate assumes (the server's cores)


def forward_flops(cfg, layers: int, window: int) -> float:
    """Operations per token of a forward pass through `layers` blocks (weights twice, attention over a window)."""
    d, d_mlp = cfg.d_model, cfg.d_mlp
    kv = d * cfg.d_head * cfg.kv_heads  # each of k and v (fewer with grouped-query attention)
    per_block = 2 * (2 * d * d + 2 * kv) + 2 * 3 * d * d_mlp + 4 * window * d
    return layers * per_block + 2 * d * cfg.vocab_size * (layers == cfg.n_layers)


def sae_run_seconds(cfg, hook: str, d_sae: int, tokens: int, epochs: float, eval_tokens: int, stats_tokens: int,
                    threads: int) -> float:
    """Estimated wall seconds of a whole SAE run on `threads` threads: collect, train, evaluate, read features."""
    d_in, window = check_hook(cfg, hook), min(cfg.block_size, 128)
    to_hook = forward_flops(cfg, hook_layer(hook) + 1, window)
    flops = (tokens * to_hook + tokens * epochs * SAE_FLOPS * d_in * d_sae
             + eval_tokens * 3 * forward_flops(cfg, cfg.n_layers, window) + stats_tokens * to_hook * 2)
    return flops / (FLOPS_PER_THREAD * max(1, threads))


def check_sae_run(cfg, hook: str, d_sae: int, tokens: int, epochs: float, eval_tokens: int, stats_tokens: int,
                  budget: SAEBudget) -> float:
    """The estimated seconds, or SAEBudgetError when the buffer or the time is over budget."""
    seconds = sae_run_seconds(cfg, hook, d_sae, tokens, epochs, eval_tokens, stats_tokens, budget.threads)
    if seconds > budget.max_seconds:
        fits = tokens_that_fit(cfg, hook, d_sae, epochs, eval_tokens, stats_tokens, budget)
        advice = (f"at most {fits:,} tokens fit in that time" if fits else
                  "even the smallest run does not fit: use fewer features or a smaller model")
        raise SAEBudgetError(f"This SAE would take about {minutes(seconds)} on this server's {budget.threads} "
                             f"cores (collecting {tokens:,} activations is a pass of the model per token); "
                             f"runs here may take {minutes(budget.max_seconds)}: {advice}.")
    d_in = check_hook(cfg, hook)
    if tokens * d_in * ACTIVATION_BYTES > budget.max_activation_bytes:
        most = budget.max_activation_bytes // (d_in * ACTIVATION_BYTES) // TOKEN_STEP * TOKEN_STEP
        raise SAEBudgetError(f"{tokens:,} activations of width {d_in} would take "
                             f"{tokens * d_in * ACTIVATION_BYTES / 1e6:,.0f} MB; this server allows "
                             f"{budget.max_activation_bytes / 1e6:,.0f} MB (at most {most:,} tokens here).")
    return seconds


def tokens_that_fit(cfg, hook: str, d_sae: int, epochs: float, eval_tokens: int, stats_tokens: int,
                    budget: SAEBudget, wanted: int = DEFAULT_TOKENS) -> int:
    """The largest token budget up to `wanted`, a multiple of TOKEN_STEP, within the budget (0: none fits)."""
    d_in = check_hook(cfg, hook)
    fixed = sae_run_seconds(cfg, hook, d_sae, 0, epochs, eval_tokens, stats_tokens, budget.threads)
    per_token = sae_run_seconds(cfg, hook, d_sae, 1, epochs, 0, 0, budget.threads)
    by_time = (budget.max_seconds - fixed) / per_token if per_token > 0 else wanted
    by_bytes = budget.max_activation_bytes / (d_in * ACTIVATION_BYTES)
    return int(max(0, min(wanted, by_time, by_bytes)) // TOKEN_STEP * TOKEN_STEP)


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} minutes"
