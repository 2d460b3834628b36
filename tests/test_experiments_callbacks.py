"""Experiments tab callbacks on a tiny model: ablation before/after, the importance map, and bad input."""
import math

import gradio as gr
import numpy as np
import pytest
import torch

from explorer.callbacks.experiments import ablation_view, evaluation_set, importance_view, top_head_inputs
from explorer.callbacks.second_model import (
    compare_view,
    copy_inspected_as_b,
    load_nanogpt_as_b,
    swap_models,
    use_shipped_as_b,
)
from explorer.common.errors import friendly
from explorer.figures.plain import Figure
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from explorer.state.workspace import DataChoice, SecondModel
from explorer.teaching.captions_experiments import ablation_caption
from model_core import GPT, GPTConfig
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.data.dataset import token_tensor, train_val_split
from model_core.data.tokenization import build_tokenizer
from tests.helpers import assert_plotly_would_send_the_same

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\nAll:\nSpeak, speak.\n" * 4
PROMPT = "First Citizen:\nB"
N_LAYERS, N_HEADS = 3, 2


def tiny_session(attn_only: bool = False, with_data: bool = True) -> Session:
    tokenizer = build_tokenizer("char", TEXT)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=16, d_model=16, n_heads=N_HEADS,
                          n_layers=N_LAYERS, attn_only=attn_only))
    session = Session(Inspected(Checkpoint(model.eval(), tokenizer), "tiny"))
    if with_data:
        train, val = train_val_split(token_tensor(tokenizer.encode(TEXT)), 0.7)
        session.workspace.data = DataChoice("tiny text", TEXT[:20], len(TEXT), tokenizer, train, val)
    return session


def run(session, heads="1.1", attn="", mlp="", neurons="", mode="mean", position=-1, temperature=0.8, length=20,
        seed=0, prompt=PROMPT):
    return ablation_view(session, prompt, heads, attn, mlp, neurons, mode, position, temperature, length, seed)


@pytest.mark.slow
def test_ablation_view_shows_both_columns_and_numbers_from_the_same_run():
    session = tiny_session()
    losses, dist, texts, numbers, note = run(session, heads="1.1, 0.0", neurons="2.5")
    assert isinstance(losses, Figure) and isinstance(dist, Figure)
    for fig in (losses, dist):
        assert_plotly_would_send_the_same(fig)
    before, after, diff = (np.asarray(t.y, dtype=float) for t in losses.data)
    assert len(before) == len(PROMPT) - 1 and np.allclose(after - before, diff, atol=1e-3)
    assert list(losses.data[0].x[:2]) == ["1:i", "2:r"]  # the loss at position t is for predicting token t + 1
    assert "Intact model" in texts and "Without head L1·H1, head L0·H0, neuron 2.5" in texts
    assert texts.count("<pre class='te-gen'>") == 2
    val_before, val_after = (float(x) for x in numbers.splitlines()[2].split("|")[2:4])
    assert f"from {val_before:.2f} to {val_after:.2f}" in note or "stays at" in note
    assert note.startswith("With head L1·H1, head L0·H0, neuron 2.5 replaced by its mean")
    assert "tiny text" in numbers and "The val loss in the header was measured by the model's training" in numbers


def test_ablation_caption_names_the_tokens_that_got_hardest_from_the_numbers():
    note = ablation_caption("head L1·H3", "mean", 1.63, 1.91, [0.0, 2.5, -0.3, 0.7], ["1:a", "2:b", "3:c", "4:d"],
                            ["x", "xa", "xab", "abc"])
    assert note == ("With head L1·H3 replaced by its mean, the loss on the validation text rises from 1.63 to 1.91 nats "
                    "per token; on this prompt the tokens that got hardest to predict are 2:b (after “xa”, +2.50), "
                    "4:d (after “abc”, +0.70).")
    assert "stays at 1.63" in ablation_caption("head 0.0", "zero", 1.63, 1.632, [0.0], ["1:a"], ["x"])
    assert "no token got harder" in ablation_caption("head 0.0", "zero", 1.63, 1.5, [-0.2], ["1:a"], ["x"])


@pytest.mark.slow
def test_zero_and_mean_ablation_give_different_validation_losses():
    session = tiny_session()
    mean_numbers, zero_numbers = run(session, heads="", mlp="0")[3], run(session, heads="", mlp="0", mode="zero")[3]
    assert mean_numbers.splitlines()[2] != zero_numbers.splitlines()[2]


@pytest.mark.slow
def test_same_seed_gives_the_same_continuations():
    session = tiny_session()
    assert run(session, seed=5)[2] == run(session, seed=5)[2]


@pytest.mark.slow
def test_importance_view_names_the_head_with_the_largest_increase():
    session = tiny_session()
    fig, note = importance_view(session, "mean")
    heat = np.asarray(fig.data[0].z, dtype=float)
    assert heat.shape == (N_LAYERS, N_HEADS) and len(fig.data[1].x) == N_LAYERS
    layer, head = np.unravel_index(int(np.argmax(heat)), heat.shape)
    assert note.startswith(f"Knocking out head L{layer}·H{head} hurts most")
    assert top_head_inputs(session, "mean") == (f"{layer}.{head}", "", "", "")


@pytest.mark.slow
def test_importance_view_of_an_attention_only_model_has_only_the_heatmap():
    fig, _ = importance_view(tiny_session(attn_only=True), "zero")
    assert [t.type for t in fig.data] == ["heatmap"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(heads=""), "Nothing to knock out"),
    (dict(heads=" , "), "Nothing to knock out"),
    (dict(heads="1.7"), "Head L1·H7 does not exist: each layer has heads 0 to 1"),
    (dict(heads="L1·H7"), "Head L1·H7 does not exist"),  # the captions' name for a head is accepted too
    (dict(heads="9.0"), "Layer 9 does not exist: this model has layers 0 to 2"),
    (dict(heads="1-3"), "Heads: “1-3” is not layer.index; write heads as layer.head, such as 1.3"),
    (dict(heads=[1, 3]), "Heads must be text"),
    (dict(heads="", mlp="x"), "FFN layers: “x” is not a layer number"),
    (dict(heads="", neurons="0.9999"), "Neuron 0.9999 does not exist"),
    (dict(heads=",".join(["0.0"] * 65)), "at most 64"),
    (dict(mode="half"), "Ablation: choose one of mean, zero"),
    (dict(position=math.nan), "Query position must be a number, not NaN"),
    (dict(temperature="hot"), "Temperature must be a number"),
    (dict(prompt="F"), "at least two tokens"),
    (dict(prompt=""), "Type a prompt first"),
])
def test_bad_input_gets_one_clear_message(kwargs, message):
    with pytest.raises(gr.Error, match=message):
        friendly(run)(tiny_session(), **kwargs)


def test_mlp_ablation_on_an_attention_only_model_is_refused():
    with pytest.raises(gr.Error, match="attention-only: it has no FFN layers"):
        friendly(run)(tiny_session(attn_only=True), heads="", mlp="0")


def test_a_model_without_known_validation_text_asks_for_data():
    with pytest.raises(gr.Error, match="prepare its text on the Data tab"):
        friendly(run)(tiny_session(with_data=False))


def test_a_model_trained_on_a_built_in_corpus_is_evaluated_on_its_validation_split():
    session = tiny_session(with_data=False)
    session.inspected.checkpoint.corpus = "welcome"  # a tiny built-in corpus; the tokenizer drops what it does not know
    evaluation = evaluation_set(session)
    known = session.inspected.tokenizer.strip_unknown("Welcome to the world of AI")
    val = session.inspected.tokenizer.encode(known[int(len(known) * 0.9):])
    assert evaluation.name == "welcome"
    assert all(w.tolist() == val for w in evaluation.windows)  # the short split gives one possible window


# ---------------------------------------------------------------- comparing with a second model (B)

def bpe_checkpoint() -> Checkpoint:
    tokenizer = build_tokenizer("bpe", TEXT * 5, vocab_size=300)
    torch.manual_seed(1)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=16, d_model=16, n_heads=2, n_layers=1))
    return Checkpoint(model.eval(), tokenizer)


def test_compare_without_model_b_asks_for_one():
    with pytest.raises(gr.Error, match="Choose model B first"):
        friendly(compare_view)(tiny_session(), PROMPT)


@pytest.mark.slow
def test_a_copy_of_the_inspected_model_scores_the_same_and_stays_frozen():
    session = tiny_session()
    assert "copy of tiny" in copy_inspected_as_b(session)
    bits, nxt, numbers, note, _ = compare_view(session, PROMPT)
    a, b = (np.asarray(t.y, dtype=float) for t in bits.data[:2])
    diff = np.nansum([np.asarray(t.y, dtype=float) for t in bits.data[2:]], axis=0)  # B − A: harder, better bars
    assert np.allclose(a, b) and np.allclose(diff, 0) and "they predict it equally well" in note
    assert "heads attend alike here (no head's weights differ by more than 0.000" in note
    with torch.no_grad():
        weight = session.inspected.model.embed.weight
        weight.add_(torch.randn_like(weight))  # A changes (as training would); B keeps the weights it copied
    _, _, _, note, _ = compare_view(session, PROMPT)
    assert "equally well" not in note


@pytest.mark.slow
def test_char_and_bpe_models_are_compared_in_bits_per_character():
    session = tiny_session()
    bpe = bpe_checkpoint()
    session.workspace.model_b = SecondModel(bpe, "bpe model")
    text = "Speak, speak."
    bits, nxt, numbers, note, grids = compare_view(session, text)
    a, b = (np.asarray(t.y, dtype=float) for t in bits.data[:2])
    first = bpe.tokenizer.decode(bpe.tokenizer.encode(text)[:1])  # never predicted by B, so not compared
    assert len(first) > 1 and len(a) == len(b) == len(text) - len(first)
    assert list(bits.data[0].x)[0] == f"{len(first)}:{text[len(first)]}"  # positions in the text
    rows = [r.split("|") for r in numbers.splitlines()[2:]]
    assert [r[2].strip() for r in rows] == ["char", "bpe"]
    # one number per model: the table's bits per character are the chart's legend means, over the same characters
    assert f"the last {len(a)} characters, which both predict" in numbers.splitlines()[0]
    for row, trace, curve in zip(rows, bits.data, (a, b)):
        assert float(row[5]) == pytest.approx(curve.mean(), abs=5e-4)
        assert f"(mean {curve.mean():.2f})" in trace.name
    assert "Their kinds of tokenizer differ" in note
    assert len(nxt.data) == 2
    assert "A has 3 layers × 2 heads and B 1 × 2, so their heads cannot be paired" in note
    assert len(grids.data) == N_LAYERS * N_HEADS + 2 and not grids.layout.shapes  # no head singled out


@pytest.mark.slow
def test_attention_grids_show_both_models_patterns_and_name_the_head_that_differs_most():
    session = tiny_session()
    torch.manual_seed(5)  # B: the same shape and tokenizer, other weights
    other = GPT(session.inspected.model.cfg).eval()
    with torch.no_grad():  # sharper attention than the near-uniform patterns of a fresh tiny model
        for block in other.blocks:
            block.attn.W_qkv.weight.mul_(8)
    session.workspace.model_b = SecondModel(Checkpoint(other, session.inspected.tokenizer), "other")
    *_, note, grids = compare_view(session, PROMPT)
    ids = torch.tensor([session.inspected.tokenizer.encode(PROMPT)])
    models = (session.inspected.model, other)
    patterns = [model.run_with_cache(ids)[1].stack("pattern")[:, 0] for model in models]  # [L, H, T, T]
    panels = N_LAYERS * N_HEADS
    for half, pattern in enumerate(patterns):  # A's panels first, then B's; weights shown as whole percents
        shown = np.stack([np.asarray(t.z, dtype=float) for t in grids.data[half * panels:(half + 1) * panels]])
        assert np.allclose(shown, np.rint(pattern.reshape(panels, *pattern.shape[-2:]).numpy() * 100))
    causal = torch.tril(torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool))
    gap = (patterns[0] - patterns[1]).abs()[..., causal].mean(-1)  # [L, H]
    layer, head = divmod(int(gap.argmax()), N_HEADS)
    assert f"head L{layer}·H{head} (outlined) differs most" in note and f"differ by {gap.max():.2f}" in note
    panel = layer * N_HEADS + head + 1
    outlined = {shape.xref for shape in grids.layout.shapes}
    assert outlined == {f"x{panel if panel > 1 else ''} domain", f"x{panel + panels} domain"}  # the same head in both


@pytest.mark.slow
def test_the_tab_hides_the_attention_grids_a_large_model_cannot_draw(monkeypatch):
    """SmolLM2 against a class model: too many heads to draw side by side. The caption says so and the grid chart
    is hidden, not left empty; drawn again for two small models."""
    from explorer.callbacks import second_model
    from explorer.tabs.experiments import _compared
    session = tiny_session()
    session.workspace.model_b = SecondModel(Checkpoint(GPT(session.inspected.model.cfg).eval(),
                                                       session.inspected.tokenizer), "other")
    grids = _compared(session, PROMPT)[-1]
    assert grids.visible is True and grids.value is not None
    monkeypatch.setattr(second_model, "is_large", lambda cfg: True)
    *_, note, grids = _compared(session, PROMPT)
    assert grids.visible is False and grids.value is None and "too many heads" in note


@pytest.mark.slow
def test_model_b_that_cannot_read_the_prompt_gets_a_message():
    session = tiny_session()
    narrow = build_tokenizer("char", "abc ")
    session.workspace.model_b = SecondModel(Checkpoint(GPT(GPTConfig(vocab_size=4, block_size=8, d_model=8,
                                                                          n_heads=2, n_layers=1)).eval(), narrow), "abc")
    with pytest.raises(gr.Error, match="Model B cannot read this text"):
        friendly(compare_view)(session, PROMPT)
    _, _, numbers, *_ = compare_view(session, "First Citizen: abc", True)  # dropping what either lacks
    assert "| 3 |" in numbers or "| 4 |" in numbers


def test_nanogpt_upload_that_runs_code_is_refused(tmp_path):
    import os
    import pickle

    class Shell:
        def __reduce__(self):
            return os.system, (f"touch {tmp_path / 'ran'}",)

    torch.save({"model": {}, "model_args": {}}, tmp_path / "ckpt.pt")
    (tmp_path / "meta.pkl").write_bytes(pickle.dumps(Shell()))
    with pytest.raises(gr.Error, match="model_args lacks|tries to import"):
        friendly(load_nanogpt_as_b)(tiny_session(), str(tmp_path / "ckpt.pt"), str(tmp_path / "meta.pkl"))
    assert not (tmp_path / "ran").exists()


def test_shipped_model_as_b_and_bad_name():
    session = tiny_session()
    with pytest.raises(gr.Error, match="Pick one of the shipped models"):
        friendly(use_shipped_as_b)(session, "nope")
    assert "shipped first-names" in use_shipped_as_b(session, "first-names")


def test_swap_inspects_model_b_and_keeps_a_as_b():
    session = tiny_session()
    bpe = bpe_checkpoint()
    session.workspace.model_b = SecondModel(bpe, "bpe model")
    version = session.inspected.version
    summary, status = swap_models(session)
    assert session.inspected.checkpoint is bpe and session.inspected.version == version + 1 and "bpe model" in summary
    assert "Model B: **tiny**" in status
    with pytest.raises(gr.Error, match="Choose model B first"):
        friendly(swap_models)(tiny_session())
