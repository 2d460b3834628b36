"""bench.studies.shapes: candidates parse into model and training overrides; a fixed step budget gives one loss."""
import pytest

from bench import vs_reference as vs
from bench.studies import shapes


def test_candidates_split_into_model_and_training_overrides():
    assert shapes.candidate("n_layers=3,d_mlp=256,muon_lr=0.03,qk_norm=true,optimizer=adamw") == (
        {"n_layers": 3, "d_mlp": 256, "qk_norm": True}, {"muon_lr": 0.03, "optimizer": "adamw"})
    assert shapes.candidate(shapes.AS_IS) == ({}, {})
    with pytest.raises(SystemExit, match="name=value"):
        shapes.candidate("n_layers3")


@pytest.mark.slow
def test_a_fixed_step_budget_gives_the_same_loss_every_time():
    splits = vs.shakespeare_splits()
    small = "n_layers=1,d_model=32,n_heads=2"
    first, again = (shapes.fixed_step_loss(splits, "classroom", small, 4) for _ in range(2))
    assert first == again  # seeded: the loss of a budget is a property of the candidate, not of the machine
    assert shapes.fixed_step_loss(splits, "classroom", small + ",lr=0.001", 4) != first


@pytest.mark.slow
def test_budgets_are_the_steps_in_the_references_time(monkeypatch):
    """Budget = 2,000 x reference step time / candidate step time, from the interleaved medians."""
    monkeypatch.setattr(shapes, "interleaved_seconds", lambda contenders, rounds, repeats: {
        name: (0.05 if name.endswith("(reference)") else 0.1 if name == "a=1" else 0.2) for name in contenders})
    monkeypatch.setattr(shapes.vs, "preset_trainer", lambda *args, **kwargs: type("T", (), {"step": None})())
    assert shapes.step_budgets(vs.shakespeare_splits(), "classroom", ["a=1", "b=2"], 1) == {"a=1": 1000, "b=2": 500}
