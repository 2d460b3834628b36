"""The train and sample command lines, run as a user would (subprocess)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from model_core.checkpoints.checkpoint import load_checkpoint

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def run(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "names-run"
    result = run("model_core.train", "--corpus", "first-names", "--preset", "tiny", "--max-steps", "6",
                 "--eval-iters", "1", "--seed", "7", "--no-tie-weights", "--decay-embeddings", "--grad-clip", "0.5",
                 "--min-lr", "2e-3", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out, result


def test_train_prints_one_json_line_and_saves_a_loadable_model(trained):
    out, result = trained
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    summary = json.loads(lines[0])
    base = {"steps", "train_loss", "val_loss", "tokens_per_sec", "seconds", "params", "out"}
    assert set(summary) - base == {"induction", "icl"}  # a text run's progress measures (accuracies: tasks only)
    assert summary["steps"] == 6 and summary["out"] == str(out)
    ckpt = load_checkpoint(out)
    final = ckpt.evals[-1]  # the summary reports the saved model's final evaluation
    assert final["step"] == 6
    assert (summary["train_loss"], summary["val_loss"]) == (final["train_loss"], final["val_loss"])
    assert (summary["induction"], summary["icl"]) == (final["induction"], final["icl"])
    assert ckpt.corpus == "first-names" and not ckpt.model.cfg.tie_weights
    t = ckpt.train_config  # the flags, kept in the file
    assert t.decay_embeddings and t.grad_clip == 0.5 and t.min_lr == 2e-3
    assert ckpt.model.num_params() == summary["params"] and len(ckpt.history) == 6


def test_sample_prints_text(trained):
    out, _ = trained
    result = run("model_core.sample", "--checkpoint", str(out), "--prompt", "ma", "--max-new-tokens", "12",
                 "--seed", "1", "--num-samples", "2", "--top-k", "5")
    assert result.returncode == 0, result.stderr
    samples = result.stdout.split("\n----------\n")
    assert len(samples) == 2 and all(s.startswith("ma") for s in samples)
    again = run("model_core.sample", "--checkpoint", str(out), "--prompt", "ma", "--max-new-tokens", "12",
                "--seed", "1", "--num-samples", "2", "--top-k", "5")
    assert again.stdout == result.stdout


@pytest.mark.parametrize("args, message", [
    (("model_core.train", "--bogus"), "unrecognized arguments"),
    (("model_core.sample", "--checkpoint", "/no/such/dir"), "no checkpoint"),
])
def test_bad_input_gives_one_line_and_no_traceback(args, message):
    result = run(*args)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert message in result.stderr


@pytest.mark.parametrize("argv, message", [
    (["--tokenizer", "nope"], "invalid choice"),
    (["--text-file", "/no/such/file.txt"], "no such file"),
    (["--preset", "tiny", "--n-heads", "3"], "divisible"),
    (["--preset", "tiny", "--lr", "-1"], "lr must be"),
    (["--corpus", "welcome", "--preset", "tiny"], "block size"),
])
def test_train_main_reports_bad_settings_in_one_line(argv, message, capsys):
    from model_core.train import main

    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's own errors
        code = exit.code
    err = capsys.readouterr().err
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1, err


def test_sample_rejects_unknown_characters(trained, capsys):
    from model_core.sample import main

    out, _ = trained
    assert main(["--checkpoint", str(out), "--prompt", "Zoë!", "--max-new-tokens", "3"]) == 1
    err = capsys.readouterr().err
    assert "'ë'" in err and len(err.strip().splitlines()) == 1
