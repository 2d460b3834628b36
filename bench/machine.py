"""The CPU a benchmark ran on, as a report names it: its model and whether it multiplies bfloat16 natively."""
from pathlib import Path

NATIVE_BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo flags of CPUs with bfloat16 arithmetic


def cpu_fields(path: str = "/proc/cpuinfo") -> tuple[str, set]:
    """(the first CPU's model name, its flags); ("unknown CPU", empty) where the file is missing (not Linux)."""
    name, flags = "unknown CPU", set()
    try:
        text = Path(path).read_text()
    except OSError:
        return name, flags
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and name == "unknown CPU":
            name = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return name, flags


def cpu_description() -> str:
    """"AMD EPYC (AVX2; no native bfloat16: neither avx512_bf16 nor amx_bf16)", or which native flags it has."""
    name, flags = cpu_fields()
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    native = [f for f in NATIVE_BFLOAT16_FLAGS if f in flags]
    bfloat16 = (f"native bfloat16: {', '.join(native)}" if native else
                f"no native bfloat16: neither {' nor '.join(NATIVE_BFLOAT16_FLAGS)}")
    return f"{name} ({vector}; {bfloat16})"
