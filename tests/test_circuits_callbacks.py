"""The Heads tab's circuits section, the grokking lab and the Train tab's progress chart, through their
callbacks: figures from the data, captions that state the numbers, and a sentence for bad input."""
import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from explorer.callbacks import circuits as C
from explorer.callbacks import grokking as G
from explorer.callbacks.train import progress_json
from explorer.common.errors import UserError
from explorer.state.inspected import Inspected
from explorer.state.session import REGISTRY, Session
from explorer.tabs import grokking as grokking_tab
from explorer.tabs.binding import SHARED
from model_core.analysis.circuits import copying_scores
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.data.tasks.registry import make_task
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from model_core.training.train_config import TrainConfig
from model_core.training.trainer import Trainer
from tests.helpers import assert_plotly_would_send_the_same, data_session


def test_head_circuits_show_the_tokens_asked_for_and_the_copying_score():
    session = data_session()
    ov, qk, positional, rows, caption = C.head_circuits_view(session, 1, 0, "Citizen", 3)
    tok = session.inspected.tokenizer
    labels = [tok.token_label(i) for i in dict.fromkeys(tok.encode("Citizen"))]
    assert len(rows) == len(labels) and [r[0] for r in rows] == labels
    assert all(len(r[1].split(") ")) == 3 for r in rows)  # three outputs per token
    assert ov.data[0].z.shape == (len(labels), len(labels)) and positional is not None
    score = copying_scores(session.inspected.model)[1, 0]
    assert f"{score:+.2f}" in caption
    for fig in (ov, qk, positional):
        assert_plotly_would_send_the_same(fig)


def test_the_positional_qk_chart_shows_only_for_a_model_with_a_position_table():
    """A rotary model (SmolLM2's kind) has no position table: its positional QK chart is hidden, not left empty."""
    from explorer.tabs.heads import _circuits_shown
    from tests.helpers import LLAMA
    learned = data_session()
    tok = learned.inspected.tokenizer
    rotary = Session(Inspected(Checkpoint(GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=16, d_model=16,
                                                        n_heads=2, n_layers=2, **LLAMA)).eval(), tok), "rotary"))
    for session, shown in ((learned, True), (rotary, False)):
        ov, qk, positional, rows, caption = _circuits_shown(session, 1, 0, "Citizen", 3)
        assert positional.visible is shown and (positional.value is not None) is shown and rows and caption


@pytest.mark.slow
def test_composition_view_draws_every_pair_and_names_the_strongest():
    session = data_session(attn_only=True)
    heat, circuit, copying, caption = C.composition_view(session, "k")
    assert heat.data[0].z.shape == (4, 4)
    z = np.asarray(heat.data[0].z, dtype=float)
    assert np.isnan(z[2:, :]).all() and np.isfinite(z[:2, 2:]).all()  # only layer 0 -> layer 1 pairs
    assert "K-composition" in caption and copying.data[0].z.shape == (2, 2)
    with pytest.raises(UserError, match="Composition: choose one of q, k, v"):
        C.composition_view(session, "x")
    with pytest.raises(UserError, match="Top k"):
        C.head_circuits_view(session, 0, 0, "", 99)


def grokking_session(p=7, steps=40) -> Session:
    task = make_task({"name": "modular-addition", "p": p, "train_fraction": 0.5})
    train, test = task.splits()
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=p + 1, block_size=3, d_model=32, n_heads=4, n_layers=1, norm="none",
                          activation="relu", tie_weights=False))
    cfg = TrainConfig(max_steps=steps, batch_size=4096, lr=1e-2, min_lr=1e-2, warmup_steps=0, weight_decay=1.0,
                      grad_clip=0.0, eval_interval=10, eval_iters=1, snapshot_interval=0, device="cpu",
                      task=task.spec())
    trainer = Trainer(model, train, test, cfg, task.tokenizer())
    trainer.run()
    return Session(Inspected(Checkpoint.from_trainer(trainer, "task:modular-addition"), "grokking"))


@pytest.mark.slow
def test_the_grokking_lab_reads_a_modular_addition_model():
    session = grokking_session()
    embedding, neuron, logits, phases, accuracy, caption = G.grokking_view(session, 3)
    assert len(embedding.data[0].y) == 3  # frequencies 1..3 of p = 7
    assert neuron.data[0].z.shape == (7, 7) and logits.data[0].z.shape == (7, 7)
    assert {t.name for t in phases.data} >= {"train loss", "test loss", "restricted loss", "excluded loss"}
    acc = G.pair_accuracy(session.inspected.model, 7)
    mask = make_task(session.inspected.checkpoint.train_config.task).train_mask().reshape(7, 7)
    assert f"{acc[~mask].double().mean().item():.1%}" in caption  # the test accuracy it states
    last = session.inspected.checkpoint.evals[-1]  # the loss chart's last points are the losses it states
    assert f"is {last['restricted_loss']:.3g} (restricted)" in caption
    assert f"{last['excluded_loss']:.3g} (excluded)" in caption
    with pytest.raises(UserError, match="Neuron"):
        G.grokking_view(session, 10_000)



@pytest.mark.slow
def test_the_shipped_models_lab_is_computed_once_and_each_session_sees_what_its_own_would_draw():
    grokking_tab.precompute_shipped_lab()  # as the server does once its warm-up is over
    keys = ["grok-a", "grok-b"]
    try:
        hits = SHARED.hits
        for key in keys:  # the tab's buttons: Open the shipped grokking model, then Show the lab (neuron empty)
            assert "grokking" in grokking_tab.grokking_model(SimpleNamespace(session_hash=key))
        first = grokking_tab.grokking(None, SimpleNamespace(session_hash="grok-a"))
        second = grokking_tab.grokking(None, SimpleNamespace(session_hash="grok-b"))
        assert SHARED.hits == hits + 2 and second is first  # both reuse the precomputed result
        own = G.grokking_view(REGISTRY.get("grok-a"), None)
        for stored, fig in zip(first[:5], own[:5]):  # stored as gr.Plot sends a figure
            assert stored.type == "plotly" and json.loads(stored.plot) == json.loads(fig.to_json())
        assert first[5] == own[5]
    finally:
        for key in keys:
            REGISTRY.close(key)

def test_the_grokking_lab_says_what_to_do_with_another_model():
    with pytest.raises(UserError, match="not trained on modular addition"):
        G.grokking_view(data_session(), None)


def test_progress_chart_follows_the_evaluations_and_its_caption_states_the_crossing():
    evals = [{"step": s, "train_loss": 4.0, "val_loss": 4.0, "induction": i, "icl": c}
             for s, i, c in ((0, 0.02, 0.0), (100, 0.05, -0.1), (200, 0.45, -1.4), (300, 0.6, -1.6))]
    fig_json, caption = progress_json(evals, 300)
    fig = json.loads(fig_json)
    assert {t["name"] for t in fig["data"]} == {"induction score (strongest head)",
                                                "in-context learning: late − early loss (nats)"}
    assert fig["layout"]["xaxis"]["range"] == [0, 300]
    assert "crossed 0.3 at step 200" in caption and "between steps 100 and 200" in caption
    assert progress_json([{"step": 0, "train_loss": 1.0, "val_loss": 1.0}], 0)[0] == ""
