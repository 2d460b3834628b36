"""optimizer='muon': which parameters Muon trains, per-group learning rates, learning, bad input."""
import pytest
import torch

from model_core.training.optim import CombinedOptimizer
from model_core.training.train_config import TrainConfig, TrainConfigError
from model_core.training.trainer import lr_at
from tests.trainer_helpers import tiny_trainer


def names_by_optimizer(trainer) -> tuple[set, set]:
    name_of = {id(p): n for n, p in trainer.model.named_parameters()}
    muon, adamw = trainer.optimizer.optimizers
    return ({name_of[id(p)] for g in muon.param_groups for p in g["params"]},
            {name_of[id(p)] for g in adamw.param_groups for p in g["params"]})


def test_muon_trains_the_hidden_matrices_and_adamw_the_rest():
    trainer = tiny_trainer(optimizer="muon", model=dict(tie_weights=False))
    assert isinstance(trainer.optimizer, CombinedOptimizer)
    muon, adamw = names_by_optimizer(trainer)
    assert muon == {"blocks.0.attn.W_qkv.weight", "blocks.0.attn.W_o.weight",
                    "blocks.0.mlp.W_in.weight", "blocks.0.mlp.W_out.weight"}
    assert {"embed.weight", "pos_embed.weight", "unembed.weight", "blocks.0.ln1.norm.weight",
            "blocks.0.attn.W_qkv.bias"} <= adamw
    assert not muon & adamw and len(muon | adamw) == len(list(trainer.model.parameters()))


@pytest.mark.slow
def test_each_group_follows_the_schedule_from_its_own_peak():
    trainer = tiny_trainer(optimizer="muon", lr=4e-3, muon_lr=0.03, warmup_steps=5)
    for _ in range(3):
        trainer.step()
    scale = lr_at(2, trainer.cfg) / trainer.cfg.lr  # the factor of the third step
    muon, adamw = trainer.optimizer.optimizers
    assert muon.param_groups[0]["lr"] == pytest.approx(0.03 * scale)
    assert [g["lr"] for g in adamw.param_groups] == pytest.approx([4e-3 * scale] * len(adamw.param_groups))


@pytest.mark.slow
def test_muon_learns_the_tiny_corpus():
    trainer = tiny_trainer(optimizer="muon", max_steps=40)
    first = trainer.evaluate()["val_loss"]
    trainer.run()
    assert trainer.evaluate()["val_loss"] < first - 0.5


@pytest.mark.slow
def test_newton_schulz_steps_reach_muon_and_change_its_update():
    """One step from the same weights and batch: the number of Newton-Schulz iterations changes the update of
    the hidden matrices (Muon's orthogonalisation) and of nothing AdamW trains."""
    trainers = {n: tiny_trainer(optimizer="muon", muon_ns_steps=n, warmup_steps=0) for n in (1, 5)}
    for n, trainer in trainers.items():
        assert trainer.optimizer.optimizers[0].param_groups[0]["ns_steps"] == n
        trainer.step()
    one, five = (dict(t.model.named_parameters()) for t in trainers.values())
    muon_names, adamw_names = names_by_optimizer(trainers[1])
    assert all(not torch.allclose(one[name], five[name]) for name in muon_names)
    assert all(torch.equal(one[name], five[name]) for name in adamw_names)


def test_muon_needs_hidden_matrices():
    message = "optimizer 'muon' trains the 2-D weight matrices .* use optimizer 'adamw'"
    with pytest.raises(TrainConfigError, match=message):
        tiny_trainer(optimizer="muon", model=dict(d_model=1, n_heads=1))


@pytest.mark.parametrize("field, value, message", [
    ("optimizer", "sgd", "optimizer must be one of adamw, muon; got 'sgd'"),
    ("muon_lr", 0, "muon_lr must be a positive number"),
    ("muon_momentum", 1.0, "muon_momentum must be in [0, 1)"),
    ("muon_ns_steps", 0, "muon_ns_steps must be a whole number from 1 to 10"),
    ("muon_ns_steps", 11, "muon_ns_steps must be a whole number from 1 to 10"),
    ("muon_ns_steps", 2.5, "muon_ns_steps must be a whole number from 1 to 10"),
    ("muon_ns_steps", True, "muon_ns_steps must be a whole number from 1 to 10"),
])
def test_bad_optimizer_settings_say_what_to_use(field, value, message):
    with pytest.raises(TrainConfigError) as err:
        TrainConfig(**{field: value})
    assert message in str(err.value)


def test_train_config_with_muon_round_trips():
    cfg = TrainConfig(optimizer="muon", muon_lr=0.05, muon_ns_steps=3, precision="bf16")
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    assert torch.optim.Muon  # the pinned torch has it
