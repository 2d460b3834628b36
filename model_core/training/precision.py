"""Numeric precision of training: bf16 autocast where the hardware has it, TF32 matmuls on CUDA."""
import contextlib

import torch

from model_core.training.train_config import TrainConfigError


def bf16_supported(device: torch.device) -> bool:
    """True when device computes in bfloat16 natively (CUDA with bf16, a CPU with AVX512-BF16 or AMX)."""
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        cpu = torch.cpu
        flags = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
        return any(getattr(cpu, f, lambda: False)() for f in flags)
    return False


def check_precision(device: torch.device, precision: str, compile_model: bool = False) -> None:
    """TrainConfigError, before any training, when precision or compile cannot run on device."""
    if precision == "bf16" and not bf16_supported(device):
        hardware = "a CPU with AVX512-BF16 or AMX" if device.type == "cpu" else "a GPU with bfloat16 (Ampere or newer)"
        raise TrainConfigError(
            f"precision 'bf16' needs {hardware}; this {device.type} does not compute in bfloat16 natively "
            "(it would be emulated, slower than fp32): use precision 'fp32'."
        )
    if compile_model and device.type != "cuda":
        raise TrainConfigError(
            f"compile is for CUDA GPUs (on {device.type} torch.compile costs minutes of compiling for little "
            "gain and needs a C++ toolchain): leave compile off."
        )


def autocast(device: torch.device, precision: str):
    """Context in which matmuls run in bfloat16 (weights stay fp32), or a no-op for fp32."""
    if precision != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def enable_fast_matmul(device: torch.device) -> None:
    """TF32 for fp32 matmuls and convolutions on CUDA (Ampere+): ~10-bit mantissa, plenty for training."""
    if device.type == "cuda" and torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
