"""No validation split (--val-fraction 0, the Data tab's "none"): one-sentence corpora train, and every report
says the losses are the training text's."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.callbacks import data, train
from explorer.common.errors import UserError
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from model_core import GPT, GPTConfig
from model_core.checkpoints.checkpoint import Checkpoint, load_checkpoint
from model_core.data.corpora import load_text_file, min_text_chars
from model_core.data.dataset import DataError, split_by_val_fraction, token_tensor, val_or_none
from model_core.data.tokenization import build_tokenizer

ROOT = Path(__file__).resolve().parents[1]


def run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "model_core.train", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})


def test_split_by_val_fraction():
    ids = token_tensor(list(range(100)))
    train_ids, val_ids = split_by_val_fraction(ids, 0.1)
    assert train_ids.tolist() == list(range(90)) and val_ids.tolist() == list(range(90, 100))
    train_ids, val_ids = split_by_val_fraction(ids, 0)
    assert train_ids.tolist() == list(range(100)) and len(val_ids) == 0 and val_or_none(val_ids) is None
    for bad in (-0.1, 0.9, True, "0.1", float("nan")):
        with pytest.raises(DataError, match="from 0 \\(no validation split\\) to 0.5"):
            split_by_val_fraction(ids, bad)


def test_a_short_text_file_needs_one_window_without_a_validation_split(tmp_path):
    assert min_text_chars(8, 0.1) == 90 and min_text_chars(8, 0) == 9
    path = tmp_path / "one-line.txt"
    path.write_text("hello there world")
    assert load_text_file(path, block_size=8, val_fraction=0) == "hello there world"
    with pytest.raises(ValueError, match="at least 90"):
        load_text_file(path, block_size=8)


@pytest.mark.slow
def test_cli_trains_a_one_sentence_corpus_with_val_fraction_0(tmp_path):
    refused = run("--corpus", "toy-words", "--tokenizer", "word", "--preset", "tiny", "--max-steps", "3")
    assert refused.returncode == 1 and "the validation split has 2 tokens" in refused.stderr
    assert "--val-fraction 0" in refused.stderr and "Traceback" not in refused.stderr
    out = tmp_path / "toy"
    result = run("--corpus", "toy-words", "--tokenizer", "word", "--preset", "tiny", "--val-fraction", "0",
                 "--max-steps", "5", "--eval-iters", "1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "using block size 11" in result.stderr  # the 12-token text is shorter than tiny's 16-token block
    assert "evaluated on the training text" in result.stderr
    summary = json.loads(result.stdout)
    assert summary["steps"] == 5 and summary["val_loss"] is None and summary["train_loss"] > 0
    ckpt = load_checkpoint(out)
    assert ckpt.model.cfg.block_size == 11 and ckpt.evals[-1]["val_loss"] is None
    welcome = run("--corpus", "welcome", "--preset", "tiny", "--val-fraction", "0", "--block-size", "8",
                  "--max-steps", "3", "--eval-iters", "1", "--out", str(tmp_path / "welcome"))
    assert welcome.returncode == 0, welcome.stderr
    assert json.loads(welcome.stdout)["val_loss"] is None


def test_data_tab_none_split_says_it_evaluates_on_the_training_text():
    tok = build_tokenizer("char", "abc")
    session = Session(Inspected(Checkpoint(GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, d_model=8, n_heads=2,
                                               n_layers=1)).eval(), tok), "tiny"))
    *_, split, batch = data.data_view(session, "welcome", None, "char", 512, "none")
    assert "No validation split" in split and "on the training text" in split
    assert len(session.workspace.data.train) == 26 and len(session.workspace.data.val) == 0 and batch
    *_, split, _ = data.data_view(session, "first-names", None, "char", 512, "10%")
    assert "(first 90%)" in split and len(session.workspace.data.val) > 0
    *_, split, _ = data.data_view(session, "first-names", None, "char", 512)  # the old four inputs: 10%
    assert "(last 10%" in split
    with pytest.raises(UserError, match="Validation split: choose one of 10%, none"):
        data.data_view(session, "welcome", None, "char", 512, "half")


def test_app_refuses_a_tiny_corpus_with_a_validation_split_and_names_the_fix():
    tok = build_tokenizer("char", "abc")
    session = Session(Inspected(Checkpoint(GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, d_model=8, n_heads=2,
                                               n_layers=1)).eval(), tok), "tiny"))
    arch = dict(n_layers=1, n_heads=2, d_model=8, block_size=8, activation="gelu", norm="layernorm",
                norm_placement="pre", positional="learned", tie_weights=True, attn_only=False, dropout=0.0,
                qk_norm=False, mlp_ratio=4, init="gpt2")
    optim = dict(lr=1e-2, batch_size=4, max_steps=5, warmup_steps=0, weight_decay=0.0, grad_clip=1.0,
                 eval_interval=5, optimizer="adamw", muon_lr=0.02, muon_ns_steps=5, decay_embeddings=False)
    values = [arch[k] for k in train.ARCH_FIELDS] + [optim[k] for k in train.OPTIM_FIELDS]
    with pytest.raises(ValueError, match="Validation split 'none'"):
        train.start_training(session, "welcome", "char", 512, *values, "10%")
    assert session.workspace.run is None
