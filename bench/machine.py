"""The CPU a benchmark ran on, as a report names it: its model and whether it multiplies bfloat16 natively."""
import os
from datetime import datetime, timezone
from pathlib import Path

NATIVE_BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo flags of CPUs with bfloat16 arithmetic
# oneDNN's instruction-set caps below its first with bfloat16 (AVX512_CORE_BF16): torch's bfloat16 products then run
# as on a CPU without it (docs/benchmarks.md, "emulating a CPU without native bfloat16")
NO_BFLOAT16_ISAS = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX512_CORE", "AVX512_CORE_VNNI")


def bfloat16_capped() -> bool:
    """ONEDNN_MAX_CPU_ISA caps oneDNN below bfloat16 arithmetic (an emulated CPU without native bfloat16)."""
    return os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper() in NO_BFLOAT16_ISAS


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
    if native and bfloat16_capped():
        bfloat16 += f", unused: ONEDNN_MAX_CPU_ISA={os.environ['ONEDNN_MAX_CPU_ISA']}"
    return f"{name} ({vector}; {bfloat16})"


def machine_facts() -> dict:
    """What a report names about the machine: CPU model, cores, AVX-512 and native bfloat16, load, date (UTC)."""
    name, flags = cpu_fields()
    return {"cpu": name, "cores": os.cpu_count(), "avx512": "avx512f" in flags,
            "native_bfloat16": any(f in flags for f in NATIVE_BFLOAT16_FLAGS) and not bfloat16_capped(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def machine_line(facts: dict) -> str:
    """"AMD EPYC 7B13, 2 cores, AVX-512: yes, native bfloat16: no; load average 1.2 at the start; 2026-11-26 ..."."""
    yes = {True: "yes", False: "no"}
    return (f"{facts['cpu']}, {facts['cores']} cores, AVX-512: {yes[facts['avx512']]}, native bfloat16: "
            f"{yes[facts['native_bfloat16']]}; load average {facts['load_average'][0]:g} at the start; {facts['date']}")
