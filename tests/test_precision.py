"""--precision bf16 and --compile: refused with a clear message where they cannot run, bf16 trains where it can."""
import math

import pytest
import torch

from model_core import train as train_cli
from model_core.training import precision
from model_core.training.train_config import TrainConfig, TrainConfigError
from tests.trainer_helpers import tiny_trainer


def test_bf16_without_hardware_support_is_refused_before_training(monkeypatch):
    monkeypatch.setattr(precision, "bf16_supported", lambda device: False)
    message = "precision 'bf16' needs a CPU with AVX512-BF16 or AMX.*use precision 'fp32'"
    with pytest.raises(TrainConfigError, match=message):
        tiny_trainer(precision="bf16")


def test_the_cli_reports_missing_bf16_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(precision, "bf16_supported", lambda device: False)
    code = train_cli.main(["--corpus", "first-names", "--preset", "tiny", "--precision", "bf16", "--max-steps", "1"])
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: precision 'bf16' needs") and "\n" not in err


def test_compile_off_cuda_is_refused():
    with pytest.raises(TrainConfigError, match="compile is for CUDA GPUs"):
        tiny_trainer(compile=True)


@pytest.mark.slow
@pytest.mark.skipif(not precision.bf16_supported(torch.device("cpu")), reason="this CPU has no native bfloat16")
def test_bf16_autocast_trains_close_to_fp32():
    fp32, bf16 = tiny_trainer(max_steps=30), tiny_trainer(max_steps=30, precision="bf16")
    first = [t.step()["loss"] for t in (fp32, bf16)]
    assert first[1] == pytest.approx(first[0], abs=0.02)  # same weights and batch, bf16 rounding only
    for t in (fp32, bf16):
        t.run()
    assert all(p.dtype == torch.float32 for p in bf16.model.parameters())  # autocast keeps fp32 weights
    assert math.isfinite(bf16.history[-1]["loss"]) and bf16.history[-1]["loss"] < bf16.history[0]["loss"] - 0.5


def test_bad_precision_names_the_choices():
    with pytest.raises(TrainConfigError, match="precision must be one of fp32, bf16; got 'fp16'"):
        TrainConfig(precision="fp16")
