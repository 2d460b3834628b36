"""Training in tests: tiny trainers on a repetitive text (trainer, optimiser, precision, remote, run-record and
multi-process tests), a pause / resume / stop run checked against an uninterrupted one, and the Train tab's values
and waits for the callbacks and lifecycle tests."""
import threading

import pytest
import torch

from explorer.callbacks import train as train_tab
from explorer.state.session import Session
from model_core import GPT, GPTConfig
from model_core.data.dataset import token_tensor, train_val_split
from model_core.data.tokenization import build_tokenizer
from model_core.training.run_protocol import TrainJob
from model_core.training.train_config import TrainConfig
from model_core.training.trainer import Trainer
from tests.helpers import wait_for

TEXT = "the cat sat on the mat. the dog sat on the log. " * 40


def tiny_trainer(seed: int = 0, model: dict = None, init_seed: int = None, **train) -> Trainer:
    """make_trainer with 40 steps of 8 sequences and no evaluations unless asked."""
    return make_trainer(seed, model, init_seed, **{**dict(max_steps=40, batch_size=8, eval_interval=0), **train})


def make_trainer(seed=0, model_overrides=None, init_seed=None, **train_overrides) -> Trainer:
    return Trainer(*make_job(seed, model_overrides, init_seed, **train_overrides))


def make_job(seed=0, model_overrides=None, init_seed=None, **train_overrides) -> TrainJob:
    """A tiny model, its text and a TrainConfig: what a Trainer (here or in a training child) trains. seed: the
    batches (and, unless init_seed is given, the model's initial weights)."""
    tok = build_tokenizer("char", TEXT)
    train, val = train_val_split(token_tensor(tok.encode(TEXT)))
    torch.manual_seed(seed if init_seed is None else init_seed)
    arch = dict(vocab_size=tok.vocab_size, block_size=16, d_model=32, n_heads=2, n_layers=1)
    model = GPT(GPTConfig(**{**arch, **(model_overrides or {})}))
    cfg = dict(max_steps=60, batch_size=16, lr=1e-2, warmup_steps=5, eval_interval=20, eval_iters=2,
               snapshot_interval=0, seed=seed, device="cpu")
    cfg.update(train_overrides)
    return TrainJob(model, train, val, TrainConfig(**cfg), tok)


def same_weights(model, reference) -> bool:
    ref = reference.state_dict()
    return all(torch.allclose(v, ref[k], rtol=1e-5, atol=1e-6) for k, v in model.state_dict().items())


def pause_resume_stop(trainer, control, run, reference: Trainer, steps=lambda t: t.step_count) -> None:
    """run() in a thread; through control: pause after 3 steps, resume (the count must move again), stop (the
    run must end as 'stopped'). trainer: what to read (a Trainer, or a run's RunProgress), steps(trainer) its step
    count; reference: an untouched trainer built like it.

    That the pause held is shown without timing: the weights seen while paused are the reference's after
    exactly the paused step count, and the whole history equals the reference's uninterrupted run, so no
    step was skipped, repeated or taken unseen while paused."""
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: steps(trainer) >= 3)
        control.pause()
        wait_for(lambda: trainer.state == "paused")
        paused_at = steps(trainer)
        paused_weights = {k: v.clone() for k, v in trainer.model.state_dict().items()}
        assert {steps(trainer) for _ in range(50)} == {paused_at} and trainer.state == "paused"
        control.resume()
        wait_for(lambda: steps(trainer) > paused_at + 2)
        assert trainer.state == "running"
    finally:
        control.stop()
        thread.join(timeout=30)
    assert not thread.is_alive() and trainer.state == "stopped"
    reference.run(max_steps=paused_at)
    paused_model = GPT(trainer.model.cfg)
    paused_model.load_state_dict(paused_weights)
    assert same_weights(paused_model, reference.model), f"the weights seen while paused are not step {paused_at}'s"
    reference.run(max_steps=steps(trainer))
    assert [m["step"] for m in trainer.history] == list(range(1, steps(trainer) + 1))
    assert [m["loss"] for m in trainer.history] == pytest.approx([m["loss"] for m in reference.history], rel=1e-5)
    assert same_weights(trainer.model, reference.model)  # the stopped run's weights are its last step's


# Train-tab controls in ARCH_FIELDS / OPTIM_FIELDS order: a tiny model that trains in about a second.
TINY_ARCH = dict(n_layers=1, n_heads=2, d_model=16, block_size=8, activation="gelu", norm="layernorm",
                 norm_placement="pre", positional="learned", tie_weights=True, attn_only=False, dropout=0.0,
                 qk_norm=False, mlp_ratio=4, init="gpt2")
TINY_OPTIM = dict(lr=1e-2, batch_size=8, max_steps=30, warmup_steps=5, weight_decay=0.1, grad_clip=1.0,
                  eval_interval=10, optimizer="adamw", muon_lr=0.02, muon_ns_steps=5, decay_embeddings=False)


def arch_values(**overrides) -> list:
    return [{**TINY_ARCH, **overrides}[k] for k in train_tab.ARCH_FIELDS]


def train_values(**overrides) -> list:
    arch = {k: v for k, v in overrides.items() if k in TINY_ARCH}
    optim = {**TINY_OPTIM, **{k: v for k, v in overrides.items() if k in TINY_OPTIM}}
    return arch_values(**arch) + [optim[k] for k in train_tab.OPTIM_FIELDS]


def wait_until_done(session: Session, timeout: float = 180.0):
    """Poll like the page's timer does until the run ends; -> the last poll's outputs. The deadlines here catch a
    hung run, not a slow one: on a shared 2-core machine a 30-step run can take a minute."""
    wait_for(lambda: not train_tab.poll(session)["running"],
             lambda: f"training to finish: {train_tab.poll(session)['status']}",
             timeout, interval=0.1)
    return train_tab.poll(session)


def wait_for_state(session: Session, state: str, timeout: float = 120.0) -> None:
    wait_for(lambda: session.workspace.run.progress.state == state,
             lambda: f"the run to reach {state!r} (is {session.workspace.run.progress.state!r})", timeout)


def wait_for_steps(session: Session, steps: int, timeout: float = 120.0) -> None:
    wait_for(lambda: session.workspace.run.progress.step >= steps, f"training to reach step {steps}", timeout)
