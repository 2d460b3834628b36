"""How big a model the Train-tab controls describe, and why one over this server's limit needs a GPU."""
import torch

from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from model_core import GPT, GPTConfig
from model_core.training.presets import get_preset

CPU_FLOPS = 1e11  # what a 2-core CPU sustains training here (~27k tokens/s x 6 x 0.8M parameters, docs/training.md)
GPU_FLOPS = 3e13  # a mid-range GPU in bf16, for the comparison
_CLASSROOM = get_preset("classroom").model
CLASSROOM_HINT = (f"On this CPU use the classroom size (preset 'classroom': {_CLASSROOM['n_layers']} layers x "
                  f"{_CLASSROOM['n_heads']} heads, d_model {_CLASSROOM['d_model']}).")


def count_params(cfg: GPTConfig) -> int:
    """Parameters of the model cfg describes, without allocating its weights."""
    with torch.device("meta"):
        return GPT(cfg).num_params()


def gpu_explanation(n_params: int, batch_size: int, block_size: int, steps: int) -> str:
    """Why a model this size wants a GPU: the arithmetic of one training step, on a CPU and on a GPU."""
    flops = 6 * n_params * batch_size * block_size  # forward + backward, ~6 operations per weight per token
    cpu, gpu = flops / CPU_FLOPS, flops / GPU_FLOPS
    return (f"One training step (batch {batch_size} x {block_size} tokens) is about 6 x parameters x tokens = "
            f"{flops:.1e} operations: ~{cpu:,.0f} s on this CPU ({cpu * steps / 3600:,.1f} hours for {steps:,} "
            f"steps), ~{gpu:.2f} s on a GPU ({gpu * steps / 60:,.0f} minutes). {CLASSROOM_HINT}")


def check_model_size(n_params: int, batch_size: int, block_size: int, steps: int) -> None:
    """UserError explaining the limit and the GPU arithmetic when the model is over --max-params."""
    if n_params > LIMITS.max_params:
        raise UserError(f"This model has {n_params:,} parameters; the limit here is {LIMITS.max_params:,}, so "
                        f"it needs a GPU. {gpu_explanation(n_params, batch_size, block_size, steps)}")


def size_text(cfg: GPTConfig, batch_size=None, steps=None) -> str:
    """Markdown: the parameter count, and when it is over the limit, why such a model needs a GPU."""
    n = count_params(cfg)
    ffn = "no FFN" if cfg.attn_only else f"d_mlp {cfg.d_mlp}"
    text = f"**{n:,} parameters** (d_head {cfg.d_head}, {ffn}, vocabulary {cfg.vocab_size})"
    if n <= LIMITS.max_params:
        return text
    text += f" — over this server's limit of {LIMITS.max_params:,}: it needs a GPU."
    if isinstance(batch_size, int) and isinstance(steps, int) and batch_size > 0 and steps > 0:
        text += " " + gpu_explanation(n, batch_size, cfg.block_size, steps)
    else:
        text += " " + CLASSROOM_HINT
    return text
