"""Trainer: learning, determinism, schedule, weight-decay groups, thread control, NaN stop, snapshots."""
import json
import math
import threading

import numpy as np
import pytest
import torch

from model_core import GPT, GPTConfig
from model_core.training.optim import make_optimizer
from model_core.training.snapshots import Snapshot
from model_core.training.train_config import TrainConfig, TrainConfigError
from model_core.training.trainer import (
    TrainingError,
    evaluation_due,
    lr_at,
    next_evaluation,
    param_groups,
    resolve_device,
)
from tests.helpers import wait_for
from tests.trainer_helpers import make_trainer, pause_resume_stop


@pytest.mark.slow
def test_loss_decreases_on_a_tiny_corpus():
    trainer = make_trainer()
    assert trainer.run() == "finished"
    assert trainer.step_count == 60 and len(trainer.history) == 60
    first, last = trainer.evals[0], trainer.evals[-1]
    assert [e["step"] for e in trainer.evals] == [0, 10, 20, 40, 60]  # step 10: an early evaluation
    assert last["val_loss"] < first["val_loss"] - 1.0
    metrics = trainer.history[-1]
    assert set(metrics) == {"step", "loss", "lr", "grad_norm", "tokens_per_sec", "elapsed"}
    assert trainer.model.training
    seconds = np.diff([0.0] + [m["elapsed"] for m in trainer.history])  # each step's own time
    tokens = trainer.cfg.batch_size * trainer.block_size
    assert [m["tokens_per_sec"] for m in trainer.history] == pytest.approx(list(tokens / seconds), rel=1e-6)


def test_evaluations_come_early_then_every_interval():
    """The classroom preset evaluates every 200 steps: a class would wait that long to see its run learn."""
    assert [s for s in range(1001) if evaluation_due(s, 200)] == [0, 10, 25, 50, 100, 200, 400, 600, 800, 1000]
    assert [s for s in range(61) if evaluation_due(s, 20)] == [0, 10, 20, 40, 60]
    assert [s for s in range(21) if evaluation_due(s, 5)] == [0, 5, 10, 15, 20]  # nothing earlier to add
    assert not any(evaluation_due(s, 0) for s in range(300))  # 0: never
    for interval in (5, 20, 200):  # next_evaluation names the next step evaluation_due agrees with
        for step in range(450):
            upcoming = next_evaluation(step, interval)
            assert upcoming > step and evaluation_due(upcoming, interval)
            assert not any(evaluation_due(s, interval) for s in range(step + 1, upcoming))
    assert next_evaluation(140, 200) == 200 and next_evaluation(0, 200) == 10 and next_evaluation(7, 0) is None


@pytest.mark.slow
def test_each_evaluation_brings_a_snapshot_with_its_losses():
    """Live attention refreshes with the numbers: a snapshot at every evaluation step, holding that evaluation's
    losses, besides the snapshot interval's own."""
    trainer = make_trainer(max_steps=60, eval_interval=40, snapshot_interval=30)
    reported = []
    trainer.run(callback=reported.append)
    assert [e["step"] for e in trainer.evals] == [0, 10, 25, 40, 60]
    assert [s.step for s in trainer.snapshots] == [0, 10, 25, 30, 40, 60]
    by_step = {s.step: s for s in trainer.snapshots}
    for e in trainer.evals:
        assert by_step[e["step"]].val_loss == e["val_loss"]
    assert [m["step"] for m in reported if "eval" in m] == [0, 10, 25, 40, 60]


@pytest.mark.slow
def test_same_seed_same_losses():
    a, b = make_trainer(seed=3, max_steps=8), make_trainer(seed=3, max_steps=8)
    a.run(), b.run()
    assert [m["loss"] for m in a.history] == [m["loss"] for m in b.history]
    c = make_trainer(seed=4, max_steps=8)
    c.run()
    assert [m["loss"] for m in c.history] != [m["loss"] for m in a.history]


@pytest.mark.slow
def test_dropout_runs_are_reproducible_too():
    a, b = (make_trainer(seed=1, max_steps=5, model_overrides={"dropout": 0.1}) for _ in range(2))
    a.run(), b.run()
    assert [m["loss"] for m in a.history] == [m["loss"] for m in b.history]


def test_warmup_then_cosine_to_min_lr():
    cfg = TrainConfig(max_steps=100, lr=1e-2, warmup_steps=10)
    lrs = [lr_at(s, cfg) for s in range(101)]
    assert lrs[0] < 2e-3 and lrs[10] == pytest.approx(1e-2)
    assert all(x <= y for x, y in zip(lrs[:11], lrs[1:11]))
    assert all(x >= y for x, y in zip(lrs[10:], lrs[11:]))
    assert lrs[100] == pytest.approx(1e-3) and lr_at(500, cfg) == pytest.approx(1e-3)


def test_a_time_budget_ahead_of_the_steps_drives_the_cosine():
    cfg = TrainConfig(max_steps=1000, lr=1e-2, warmup_steps=10)
    assert lr_at(5, cfg, time_fraction=0.9) == lr_at(5, cfg)  # warmup counts steps
    assert lr_at(20, cfg, time_fraction=0.0) == lr_at(20, cfg)  # steps ahead of time: steps rule
    assert lr_at(20, cfg, time_fraction=0.5) == pytest.approx(5.5e-3)  # half-way down the cosine
    assert lr_at(20, cfg, time_fraction=1.2) == pytest.approx(1e-3)


@pytest.mark.parametrize("tie", [True, False])
def test_weight_decay_only_on_linear_matrices(tie):
    model = GPT(GPTConfig(vocab_size=10, block_size=8, d_model=16, n_heads=2, n_layers=2, tie_weights=tie))
    decay, no_decay = param_groups(model, 0.1)
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    names = {id(p): n for n, p in model.named_parameters()}  # a tied tensor is listed once, as embed.weight
    decayed = {names[id(p)] for p in decay["params"]}
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))
    assert "embed.weight" not in decayed and "pos_embed.weight" not in decayed
    assert all(n.endswith("weight") and "ln" not in n for n in decayed)
    assert ("unembed.weight" in decayed) == (not tie)
    assert all(names[id(p)].endswith("bias") or "ln" in names[id(p)] or "embed" in names[id(p)]
               for p in no_decay["params"])


@pytest.mark.parametrize("tie", [True, False])
def test_decay_embeddings_adds_the_embedding_tables_and_nothing_else(tie):
    model = GPT(GPTConfig(vocab_size=10, block_size=8, d_model=16, n_heads=2, n_layers=2, tie_weights=tie))
    names = {id(p): n for n, p in model.named_parameters()}
    usual, _ = param_groups(model, 0.1)
    decay, no_decay = param_groups(model, 0.1, decay_embeddings=True)
    added = {names[id(p)] for p in decay["params"]} - {names[id(p)] for p in usual["params"]}
    assert added == {"embed.weight", "pos_embed.weight"}  # a tied unembedding is embed.weight itself
    assert all(names[id(p)].endswith("bias") or "ln" in names[id(p)] for p in no_decay["params"])


@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_the_optimizer_decays_the_embeddings_only_when_asked(optimizer):
    model = GPT(GPTConfig(vocab_size=10, block_size=8, d_model=16, n_heads=2, n_layers=1, tie_weights=False))
    for switch in (False, True):
        cfg = TrainConfig(optimizer=optimizer, weight_decay=0.5, decay_embeddings=switch)
        groups = make_optimizer(model, cfg, torch.device("cpu")).param_groups
        rate = {id(p): g["weight_decay"] for g in groups for p in g["params"]}
        assert rate[id(model.embed.weight)] == rate[id(model.pos_embed.weight)] == (0.5 if switch else 0.0)
        assert rate[id(model.unembed.weight)] == 0.5


def test_decay_embeddings_must_be_a_switch():
    with pytest.raises(TrainConfigError, match="decay_embeddings must be true or false"):
        TrainConfig(decay_embeddings="yes")


@pytest.mark.slow
def test_pause_resume_stop_from_another_thread():
    trainer = make_trainer(max_steps=10**6, eval_interval=10**5)
    pause_resume_stop(trainer, trainer, trainer.run, make_trainer(max_steps=10**6, eval_interval=10**5))
    # a stop answers at once: no final evaluation, only the scheduled ones (step 0 and any early ones passed)
    assert [e["step"] for e in trainer.evals] == [s for s in range(trainer.step_count + 1) if evaluation_due(s, 10**5)]


def test_stop_wakes_a_paused_run():
    trainer = make_trainer(max_steps=10**6, eval_interval=0)
    trainer.pause()
    thread = threading.Thread(target=trainer.run)
    thread.start()
    wait_for(lambda: trainer.state == "paused")
    trainer.stop()
    thread.join(timeout=20)
    assert trainer.state == "stopped" and trainer.step_count == 0


@pytest.mark.slow
def test_max_seconds_stops_early():
    trainer = make_trainer(max_steps=10**6, eval_interval=0, warmup_steps=0)
    assert trainer.run(max_seconds=1.0) == "finished"
    assert 0 < trainer.step_count < 10**6  # the time ran out long before the steps
    assert trainer.history[-1]["lr"] < 0.9 * trainer.cfg.lr  # by steps alone it would still be ~lr
    assert trainer.budget is None and trainer.time_fraction() is None


@pytest.mark.slow
def test_zero_intervals_mean_pure_training():
    trainer = make_trainer(max_steps=3, eval_interval=0, snapshot_interval=0)
    trainer.run()
    assert trainer.step_count == 3 and trainer.evals == [] and trainer.snapshots == []


@pytest.mark.slow
def test_nan_loss_stops_with_the_step():
    trainer = make_trainer()
    trainer.run(max_steps=2)
    trainer.model.hook_dict["blocks.0.hook_resid_post"].add_hook(lambda x, hook: x * float("nan"))
    with pytest.raises(TrainingError, match="at step 3") as info:
        trainer.run(max_steps=5)
    assert "learning rate" in str(info.value) and trainer.state == "error"


@pytest.mark.slow
def test_no_hooks_left_attached_after_training_with_snapshots():
    trainer = make_trainer(max_steps=10, snapshot_interval=5)
    trainer.run()
    assert not any(h.has_hooks() for h in trainer.model.hook_dict.values())


@pytest.mark.slow
def test_snapshots_are_small_and_round_trip():
    trainer = make_trainer(max_steps=10, snapshot_interval=5, eval_interval=5)
    trainer.run()
    assert [s.step for s in trainer.snapshots] == [0, 5, 10]
    snap = trainer.snapshots[-1]
    cfg = trainer.model.cfg
    T = len(snap.probe_ids)
    assert snap.attention.shape == (cfg.n_layers, cfg.n_heads, T, T) and snap.attention.dtype == np.uint8
    assert np.allclose(snap.pattern().sum(-1), 1.0, atol=0.05)  # rows are distributions
    assert np.all(np.triu(snap.attention, k=1) == 0)  # causal
    assert snap.head_stats["entropy"].shape == (cfg.n_layers, cfg.n_heads)
    assert snap.embedding_coords.shape == (cfg.vocab_size, 2)
    assert snap.val_loss == trainer.evals[-1]["val_loss"]
    encoded = json.dumps(snap.to_dict())
    assert len(encoded) < 20_000
    back = Snapshot.from_dict(json.loads(encoded))
    assert np.array_equal(back.attention, snap.attention) and back.step == 10
    assert np.allclose(back.head_stats["entropy"], snap.head_stats["entropy"], atol=1e-4)


@pytest.mark.slow
def test_probe_text_is_used():
    trainer = make_trainer(max_steps=1, snapshot_interval=1, probe_text="the cat sat")
    trainer.run()
    assert trainer.tokenizer.decode(trainer.snapshots[0].probe_ids) == "the cat sat"


@pytest.mark.slow
def test_evaluate_restores_train_mode():
    trainer = make_trainer()
    trainer.model.train()
    result = trainer.evaluate()
    assert trainer.model.training and trainer.evals == [result] and result["step"] == 0
    # an untrained model guesses about uniformly: its loss is close to log(vocabulary size)
    assert result["val_loss"] == pytest.approx(math.log(trainer.model.cfg.vocab_size), abs=0.3)
    again = trainer.evaluate()  # the same batches every time
    assert (again["train_loss"], again["val_loss"]) == (result["train_loss"], result["val_loss"])


def test_config_errors_are_clear():
    with pytest.raises(TrainConfigError, match="lr must be a positive"):
        TrainConfig(lr=-1)
    with pytest.raises(TrainConfigError, match="batch_size"):
        TrainConfig(batch_size=0)
    with pytest.raises(TrainConfigError, match="device"):
        TrainConfig(device="tpu")
    with pytest.raises(TrainConfigError, match="unknown training config keys"):
        TrainConfig.from_dict({"learning_rate": 1})
    assert TrainConfig.from_dict(TrainConfig().to_dict()) == TrainConfig()
    assert resolve_device("cpu").type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(TrainConfigError, match="not available"):
            resolve_device("cuda")


@pytest.mark.slow
def test_before_work_runs_before_every_step_and_evaluation_batch_on_the_training_thread():
    """A training child applies a new thread count there: a run told to share the cores while its first
    evaluation runs obeys before the next batch, not after its first step."""
    trainer = make_trainer(max_steps=10, eval_interval=5, eval_iters=3)
    calls = []
    trainer.before_work = lambda: calls.append((trainer.step_count, threading.get_ident()))
    assert trainer.run() == "finished"
    evaluations = [0, 5, 10]  # each: eval_iters batches of the train and the validation split
    assert len(calls) == 10 + len(evaluations) * 2 * 3
    assert calls[:6] == [(0, threading.get_ident())] * 6  # the first evaluation, before any step
    assert {thread for _, thread in calls} == {threading.get_ident()}
