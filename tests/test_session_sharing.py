"""New sessions share the shipped model until they first use it; then each has its own (hooks are per model)."""
import pytest
import torch

from explorer.callbacks import attention, models
from explorer.state.session import new_session
from explorer.state.shipped import shipped_template

PROMPT = "ROMEO: wherefore art thou"


def weights(model) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_a_new_session_copies_nothing_until_it_uses_the_model():
    a, b = new_session("shakespeare"), new_session("shakespeare")
    template = shipped_template("shakespeare").model
    assert a.inspected.held.model is template and b.inspected.held.model is template and a.inspected.shares_model
    assert "shakespeare" in models.model_summary(a)
    assert models.slider_maxima(a)["layer"] == a.inspected.config.n_layers - 1
    assert a.inspected.shares_model  # the summary and the slider ranges read the shared model without copying it
    own = a.inspected.model
    assert own is not template and not a.inspected.shares_model and b.inspected.held.model is template
    assert all(torch.equal(v, template.state_dict()[k]) for k, v in own.state_dict().items())


@pytest.mark.slow
def test_a_session_changing_its_copy_leaves_the_shared_model_alone():
    before = weights(shipped_template("shakespeare").model)
    a = new_session("shakespeare")
    attention.attention_view(a, PROMPT, 0, 0, -1)  # hooks on its own copy
    with torch.no_grad():
        next(a.inspected.model.parameters()).add_(1.0)
    after = weights(shipped_template("shakespeare").model)
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert not any(m._forward_hooks for m in shipped_template("shakespeare").model.modules())


def test_picking_a_shipped_model_shares_it_and_gives_the_same_views():
    a = new_session("shakespeare")
    models.pick_shipped(a, "first-names")
    assert a.inspected.shares_model and a.inspected.held.model is shipped_template("first-names").model
    grid_a = attention.attention_view(a, "emma", 0, 0, -1)[1]
    assert not a.inspected.shares_model
    copy_b = new_session("first-names")
    grid_b = attention.attention_view(copy_b, "emma", 0, 0, -1)[1]
    assert grid_a.to_json() == grid_b.to_json()
