"""bench.machine: what a report says about the CPU, also when oneDNN is capped below bfloat16 arithmetic."""
import pytest

from bench import machine

SAPPHIRE_RAPIDS = ("Intel(R) Xeon(R) Processor", {"avx2", "avx512f", "avx512_bf16", "amx_bf16"})


@pytest.mark.parametrize("isa, capped", [("AVX512_CORE_VNNI", True), ("avx2", True), ("AVX512_CORE_BF16", False),
                                         ("AVX512_CORE_AMX", False), ("", False)])
def test_a_cap_below_bfloat16_reports_no_native_bfloat16(monkeypatch, isa, capped):
    monkeypatch.setattr(machine, "cpu_fields", lambda: SAPPHIRE_RAPIDS)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", isa)
    assert machine.machine_facts()["native_bfloat16"] is not capped
    assert ("unused: ONEDNN_MAX_CPU_ISA" in machine.cpu_description()) is capped


def test_a_cpu_without_the_flags_has_no_native_bfloat16(monkeypatch):
    monkeypatch.setattr(machine, "cpu_fields", lambda: ("AMD EPYC", {"avx2"}))
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert not machine.machine_facts()["native_bfloat16"]
    assert machine.cpu_description() == "AMD EPYC (AVX2; no native bfloat16: neither avx512_bf16 nor amx_bf16)"
