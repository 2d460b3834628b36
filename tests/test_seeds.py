"""The seed tutorials reproduced: StatQuest's "awesome <EOS>", seed 001's size over this server's limit,
seed 003's untrained walk-through on every analysis tab, the seed presets in the Train tab's controls."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from explorer.callbacks import (
    attention,
    blocks,
    embeddings,
    ffn,
    init_model,
    models,
    presets,
    residual,
    sampling,
    train,
)
from explorer.callbacks.train_fields import checked_field
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.figures.plain import Figure
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from model_core import GPT
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.data.corpora import load_corpus
from model_core.data.dataset import split_by_val_fraction, token_tensor, val_or_none
from model_core.data.tokenization import build_tokenizer
from model_core.model.sampling import generate
from model_core.training.presets import PRESETS, get_preset
from model_core.training.trainer import Trainer
from tests.helpers import assert_plotly_would_send_the_same, wait_for

ROOT = Path(__file__).resolve().parents[1]
STATQUEST_PROMPTS = ("what is statquest <EOS>", "statquest is what <EOS>")
WELCOME = "Welcome to the world of AI"


def greedy_until_eos(model, tokenizer, prompt: str) -> str:
    ids = tokenizer.encode(prompt)
    steps = generate(model, ids, max_new_tokens=6, temperature=0, stop_token=tokenizer.stoi["<EOS>"])
    return tokenizer.decode([s.token for s in steps])


def preset_session(name: str) -> Session:
    """A session inspecting an untrained model of the preset, its data prepared as the preset says."""
    values = {"corpus": "shakespeare", "kind": "char", "val_split": "10%", **presets.preset_control_values(name)}
    tok = build_tokenizer(values["kind"], load_corpus(values["corpus"]))
    session = Session(Inspected(Checkpoint(GPT(get_preset(name).model_config(tok.vocab_size)).eval(), tok), "start"))
    init_model.use_untrained_model(session, values["corpus"], values["kind"], 512,
                                   *[values[k] for k in train.ARCH_FIELDS], values["val_split"])
    return session


def control_values(name: str) -> list:
    """/train_start's values after picking the preset: ARCH_FIELDS, OPTIM_FIELDS, validation split."""
    values = presets.preset_control_values(name)
    return [values[k] for k in (*train.ARCH_FIELDS, *train.OPTIM_FIELDS, "val_split")]


def wait_for_run(session: Session, timeout: float = 120) -> None:
    wait_for(lambda: not session.workspace.run.active, "the run finishing", timeout, interval=0.05)


# ---------------------------------------------------------------- seed 002: StatQuest

@pytest.mark.slow
def test_statquest_preset_learns_awesome_eos(one_thread):
    preset = get_preset("statquest")
    tok = build_tokenizer("word", load_corpus("toy-words"))
    assert sorted(tok.words) == sorted(["what", "is", "statquest", "awesome", "<EOS>"])
    train_ids, val_ids = split_by_val_fraction(token_tensor(tok.encode(load_corpus("toy-words"))), 0.0)
    assert len(val_ids) == 0 and val_or_none(val_ids) is None
    cfg = preset.model_config(tok.vocab_size)
    assert (cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.positional, cfg.attn_only) == (2, 1, 1, "sinusoidal", True)
    torch.manual_seed(preset.train_config().seed)
    trainer = Trainer(GPT(cfg), train_ids, None, preset.train_config(device="cpu"), tok)
    trainer.run()  # about a second on an idle CPU
    assert trainer.evals[-1]["val_loss"] is None and trainer.evals[-1]["train_loss"] < 0.3
    for prompt in STATQUEST_PROMPTS:
        assert greedy_until_eos(trainer.model, tok, prompt) == "awesome <EOS>"
    session = Session(Inspected(Checkpoint(trainer.model.eval(), tok), "statquest"))
    rows, text = sampling.steps_view(session, STATQUEST_PROMPTS[0], 0, 0, 1.0, 0.0, 50, 0)
    assert [row[1] for row in rows] == ["awesome", "<EOS>"]  # step-by-step generation stops at <EOS>
    assert [piece for piece in re.findall(r"<span title='p=[^']*' style='[^']*'>([^<]*)</span>", text)] == [
        " awesome", " &lt;EOS&gt;"]  # the words keep their spaces: not "<EOS>awesome<EOS>"


def run_cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})


@pytest.mark.slow
def test_statquest_from_the_command_line(tmp_path):
    result = run_cli("model_core.train", "--preset", "statquest", "--out", str(tmp_path / "sq"))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["val_loss"] is None and summary["params"] == 49
    assert "no validation split: evaluated on the training text" in result.stderr
    sample = run_cli("model_core.sample", "--checkpoint", str(tmp_path / "sq"), "--prompt", STATQUEST_PROMPTS[0],
                     "--temperature", "0", "--stop-at", "<EOS>", "--max-new-tokens", "10")
    assert sample.returncode == 0, sample.stderr
    assert sample.stdout.strip() == "what is statquest <EOS> awesome <EOS>"


def lesson_settings(slug: str) -> dict:
    """Every setting of a shipped lesson's steps, later steps overriding earlier ones (checked against the app)."""
    from explorer import lessons
    from explorer.teaching.lessons import read_lesson, shipped_lessons
    lesson = read_lesson(shipped_lessons()[slug], lessons.app_validator())
    return {k: v for step in lesson.steps for k, v in step.settings.items()}


def test_one_lesson_per_seed():
    from explorer.teaching.lessons import shipped_lessons
    seeds = sorted(slug for slug in shipped_lessons() if slug.startswith("seed-"))
    assert [slug[:8] for slug in seeds] == [f"seed-00{i}" for i in range(5)]
    for slug in seeds:
        assert lesson_settings(slug)  # every one parses against the app's controls and sets some


@pytest.mark.slow
def test_statquest_lesson_in_the_app(tmp_path):
    """The StatQuest lesson's own settings (data, preset, prompt), then Start: greedy "awesome <EOS>"."""
    chosen = lesson_settings("seed-002-statquest")
    assert (chosen["corpus"], chosen["tokenizer"], chosen["val_split"]) == ("toy-words", "word", "none")
    session = preset_session(chosen["preset"])
    assert "untrained" in session.inspected.name and session.inspected.model.cfg.d_model == 2
    values = presets.preset_control_values(chosen["preset"])
    values["val_split"] = chosen["val_split"]
    message = train.start_training(session, chosen["corpus"], chosen["tokenizer"], 512,
                                   *[values[k] for k in (*train.ARCH_FIELDS, *train.OPTIM_FIELDS, "val_split")])
    assert "no validation split" in message
    try:
        wait_for_run(session)
    finally:
        session.workspace.stop_training()
    shown = train.poll(session)
    status = shown["status"]
    assert "evaluated on the training text" in status and "val loss" not in status
    evals = session.workspace.run.progress.evals  # the chart's bold curve: the status starts where it starts
    assert (f"Loss on the training text fell from {evals[0]['train_loss']:.2f} (step 0) to "
            f"{evals[-1]['train_loss']:.2f} (step {evals[-1]['step']})") in status
    assert "1 layer × 1 head," in models.model_summary(session)
    line = train.param_count_view(session, values["corpus"], values["kind"], 512, *[values[k] for k in train.ARCH_FIELDS])
    assert "(d_head 2, no FFN, vocabulary 5)" in line
    figure = json.loads(shown["loss"])
    assert "evaluated on the training text" in figure["layout"]["title"]["text"]
    assert {t["name"] for t in figure["data"]} == {"train loss (each batch)", "train loss (evaluated)"}
    model, tok = session.inspected.model, session.inspected.tokenizer
    assert greedy_until_eos(model, tok, chosen["prompt"]) == "awesome <EOS>"
    assert greedy_until_eos(model, tok, STATQUEST_PROMPTS[1]) == "awesome <EOS>"


# ---------------------------------------------------------------- seed 001: too big for this CPU

@pytest.mark.slow
def test_seed_001_size_is_explained_not_trained():
    session = preset_session("tiny")
    values = control_values("seed-001")
    note = presets.preset_note(session, "seed-001")
    assert "needs a GPU" in note and "classroom" in note and "8 layers x 8 heads, d_model 512" in note
    assert "over this server's limit" in train.param_count_view(session, "shakespeare", "char", 512,
                                                                 *values[:len(train.ARCH_FIELDS)])
    with pytest.raises(UserError, match=r"parameters; the limit here is 5,000,000, so it needs a GPU") as err:
        train.start_training(session, "shakespeare", "char", 512, *values)
    assert "classroom" in str(err.value) and "hours" in str(err.value)
    with pytest.raises(UserError, match="classroom"):
        init_model.use_untrained_model(session, "shakespeare", "char", 512, *values[:len(train.ARCH_FIELDS)])
    assert session.workspace.run is None and session.inspected.name.startswith("untrained")


# ---------------------------------------------------------------- seed 003: the untrained walk-through

@pytest.mark.slow
def test_untrained_walkthrough_model_shows_on_every_analysis_tab():
    session = preset_session("seed-003-walkthrough")
    cfg = session.inspected.model.cfg
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model, session.inspected.tokenizer.vocab_size) == (2, 4, 16, 15)
    torch.manual_seed(init_model.INIT_SEED)  # the weights Start would begin from
    fresh = GPT(cfg)
    trained = session.inspected.model.state_dict().values()
    assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), trained))
    views = {
        "attention": attention.attention_view(session, WELCOME, 0, 0, 10),
        "embeddings": embeddings.embeddings_view(session, WELCOME, "2", 0),
        "residual": residual.residual_view(session, WELCOME, 0),
        "ffn": ffn.ffn_view(session, WELCOME, 1, 0),
        "blocks": blocks.blocks_view(session, WELCOME, 1),
        "sampling": sampling.distribution_view(session, WELCOME, 1.5, 0, 1.0, 0.0),
    }
    for name, outputs in views.items():
        figures = [o for o in outputs if isinstance(o, Figure) or (isinstance(o, str) and o.startswith('{"'))]
        assert figures, f"{name} drew no chart for the untrained model"
        for fig in figures:
            if isinstance(fig, Figure):
                assert_plotly_would_send_the_same(fig)
    positions = len(WELCOME)
    norm_fig = views["blocks"][0]
    assert sum(sum(t.y) for t in norm_fig.data) == 2 * positions * cfg.d_model  # every value, both panels


def test_building_block_figures_and_captions_from_constructed_data():
    from explorer.figures.building_blocks import ACTIVATION_X, activation_curves, layernorm_effect_figure
    from explorer.teaching.captions_blocks import activation_caption, norm_effect_caption
    rng = np.random.default_rng(0)
    before = rng.normal(3.0, [[1.0], [4.0]], size=(2, 200))  # two positions of very different spread
    after = (before - before.mean(1, keepdims=True)) / before.std(1, keepdims=True)
    fig = layernorm_effect_figure(before, after, norm_name="RMSNorm", where="layer 2, before attention")
    assert "RMSNorm" in fig.layout.title.text and "layer 2" in fig.layout.title.text
    assert [sum(t.y) for t in fig.data] == [400, 400]
    text = norm_effect_caption(before, after, "LayerNorm")
    assert f"std {before.std():.2f} to mean 0.00, std 1.00" in text
    low, high = before.std(1)
    assert f"range from {low:.2f} to {high:.2f}" in text
    assert "Why not exactly" not in text  # mean 0, std 1: nothing to explain
    moved = norm_effect_caption(before, after * 1.3 - 0.3, "LayerNorm")  # a trained gain and bias
    assert "mean -0.30, std 1.30" in moved and "learned gain" in moved and "learned bias" in moved
    words = activation_caption(activation_curves(ACTIVATION_X), ACTIVATION_X, "GELU")
    assert "±0.75, by 0.17" in words and "lowest output is -0.17" in words and words.endswith("uses GELU.")


@pytest.mark.parametrize("norm, placement", [("layernorm", "pre"), ("rmsnorm", "pre"), ("layernorm", "post"),
                                             ("none", "pre")])
def test_norm_before_after_is_the_models_own(norm, placement):
    tok = build_tokenizer("char", WELCOME)
    torch.manual_seed(0)
    model = GPT(get_preset("seed-003-walkthrough").model_config(tok.vocab_size, norm=norm,
                                                                 norm_placement=placement)).eval()
    _, cache = model.run_with_cache(torch.tensor([tok.encode(WELCOME)]))
    before, after = blocks.norm_input_output(cache, model.cfg, 1)
    ln = model.blocks[1].ln1.norm
    expected = torch.nn.functional.layer_norm(torch.tensor(before), (16,)) if norm == "none" else ln(torch.tensor(before))
    np.testing.assert_allclose(after, expected.detach().numpy(), atol=1e-5)


# ---------------------------------------------------------------- seed 004 and the presets in the app

@pytest.mark.slow
def test_every_preset_fits_the_train_tab_controls():
    for name in PRESETS:
        values = presets.preset_control_values(name)
        for field in (*train.ARCH_FIELDS, *train.OPTIM_FIELDS):
            checked_field(field, values[field])  # within the sliders' ranges: the app can show it
        cfg = train.model_config(preset_session("tiny"), {k: values[k] for k in train.ARCH_FIELDS})
        assert cfg.d_mlp == get_preset(name).model_config(cfg.vocab_size).d_mlp  # the ratio control keeps the width
        updates = presets.apply_preset(preset_session("tiny"), name)
        assert len(updates) == len(train.ARCH_FIELDS) + len(train.OPTIM_FIELDS) + 4
        assert presets.preset_note(preset_session("tiny"), name).startswith(f"**{name}**")


@pytest.mark.slow
def test_seed_004_post_norm_sinusoidal_bpe_trains_in_the_app(monkeypatch):
    monkeypatch.setattr(LIMITS, "max_steps", 20_000)
    values = presets.preset_control_values("seed-004")
    assert (values["norm_placement"], values["positional"], values["kind"]) == ("post", "sinusoidal", "bpe")
    session = preset_session("tiny")
    fields = dict(zip((*train.ARCH_FIELDS, *train.OPTIM_FIELDS, "val_split"), control_values("seed-004")))
    fields["max_steps"] = 30
    try:
        train.start_training(session, "shakespeare", "bpe", 512, *fields.values())
        wait_for_run(session, timeout=240)
    finally:
        session.workspace.stop_training()
    assert session.workspace.run.progress.state == "finished" and session.inspected.model.cfg.norm_placement == "post"
    first, last = session.workspace.run.progress.evals[0], session.workspace.run.progress.evals[-1]
    assert last["val_loss"] < first["val_loss"]
