"""The app's callbacks without a server: each tab's view on a tiny model, bad input, training, sessions."""
import functools
import io
import json
import re
import zipfile

import gradio as gr
import numpy as np
import pytest
import torch

from explorer.callbacks import attention, data, embeddings, ffn, history, models, residual, sampling, train
from explorer.callbacks.init_model import use_untrained_model
from explorer.callbacks.model_size import count_params
from explorer.callbacks.presets import preset_control_values
from explorer.common.errors import UserError, friendly
from explorer.common.limits import LIMITS
from explorer.figures.ffn import TOP_TOKENS_HEADERS
from explorer.figures.plain import Figure
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from explorer.tabs.data import text_controls
from model_core import GPT, GPTConfig
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.data.corpora import CORPORA, load_corpus
from model_core.data.tokenization import WordTokenizer, build_tokenizer
from model_core.model.config import ACTIVATIONS
from tests.helpers import (
    BLOCK,
    N_HEADS,
    N_LAYERS,
    PROMPT,
    TEXT,
    assert_plotly_would_send_the_same,
    tiny_session,
)
from tests.trainer_helpers import arch_values, train_values, wait_for_state, wait_for_steps, wait_until_done


def weights(session: Session) -> dict:
    return {k: v.detach().clone() for k, v in session.inspected.model.state_dict().items()}


def same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture
def session():
    return tiny_session()


def kinds(outputs) -> list[str]:
    return [type(o).__name__ for o in outputs]


# ---------------------------------------------------------------- one view per tab

@pytest.mark.slow
def test_attention_view_outputs(session):
    grid, head, steps, bars, stats, caption = attention.attention_view(session, PROMPT, 1, 1, -1)
    assert all(isinstance(f, Figure) for f in (grid, head, steps, bars))
    for fig in (grid, head, steps, bars):
        assert_plotly_would_send_the_same(fig)
    heatmaps = [t for t in grid.data if t.type == "heatmap"]
    assert len(heatmaps) == N_LAYERS * N_HEADS
    T = len(PROMPT)
    assert all(np.asarray(h.z).shape == (T, T) for h in heatmaps)
    assert [row[0] for row in stats] == [f"L{l}·H{h}" for l in range(N_LAYERS) for h in range(N_HEADS)]
    z = np.asarray(head.data[0].z, dtype=float)  # the selected head: causal rows that sum to 1
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=0.01)
    assert np.all(z[np.triu_indices(T, 1)] == 0)
    assert "L1·H1" in caption and caption.count("%") >= 1


def test_attention_view_clamps_layer_head_and_query(session):
    out = attention.attention_view(session, PROMPT, 99, -5, 500)
    assert "L2·H0" in out[1].layout.title.text


def test_residual_view_outputs(session):
    out = residual.residual_view(session, PROMPT, 1, "full")
    assert kinds(out) == ["Figure"] * 6 + ["str"]
    assert all(len(f.data) > 0 for f in out[:6])
    assert "residual" in out[-1].lower()


@pytest.mark.slow
def test_embeddings_view_outputs_2d_and_3d(session):
    out2 = embeddings.embeddings_view(session, PROMPT, "2", 1)
    assert kinds(out2) == ["Figure"] * 6 + ["str"]
    assert out2[0].data[0].type == "scatter"
    out3 = embeddings.embeddings_view(session, PROMPT, "3", N_LAYERS)
    assert out3[0].data[0].type == "scatter3d"
    assert "variance" in out3[-1]


@pytest.mark.slow
def test_ffn_view_outputs(session):
    hist, sparsity, rows, caption = ffn.ffn_view(session, PROMPT, 0, 3)
    assert isinstance(hist, Figure) and isinstance(sparsity, Figure)
    for fig in (hist, sparsity):
        assert_plotly_would_send_the_same(fig)
    assert len(rows) == 10 and [r[0] for r in rows] == list(range(1, 11))
    assert all(len(r) == len(TOP_TOKENS_HEADERS) for r in rows)  # the tab's Dataframe uses these headers
    activations = [r[2] for r in rows]
    assert activations == sorted(activations, reverse=True)
    assert "neuron" in caption


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_ffn_view_names_every_activation(activation):
    tokenizer = build_tokenizer("char", TEXT)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=BLOCK, d_model=16, n_heads=N_HEADS,
                          n_layers=N_LAYERS, activation=activation))
    hist = ffn.ffn_view(Session(Inspected(Checkpoint(model.eval(), tokenizer), "tiny")), PROMPT, 0, 0)[0]
    assert f"after {ffn.ACTIVATION_NAMES[activation]}" in json.dumps(hist.to_plotly_json()["layout"])


def test_model_summary_names_the_last_loss_and_where_it_was_measured(session):
    model, tok = session.inspected.model, session.inspected.tokenizer
    split = Checkpoint(model, tok, evals=[{"step": 9, "train_loss": 2.5, "val_loss": 2.75}])
    no_split = Checkpoint(model, tok, evals=[{"step": 9, "train_loss": 0.25, "val_loss": None}])
    assert models.model_summary(Session(Inspected(split, "a"))).endswith(
        "val loss 2.750 (its training's evaluation at step 9).")
    assert models.model_summary(Session(Inspected(no_split, "b"))).endswith(
        "loss on the training text 0.250 (its training's evaluation at step 9; no validation split).")
    assert "loss" not in models.model_summary(Session(Inspected(Checkpoint(model, tok), "c")))
    task = Checkpoint(model, tok, evals=[{"step": 900, "train_loss": 0.001, "val_loss": 47.008, "train_acc": 1.0,
                                          "val_acc": 0.02}])  # a memorising model: confidently wrong on new pairs
    assert models.model_summary(Session(Inspected(task, "d"))).endswith(
        "test loss 47.008 on examples never trained on (test accuracy 2%) (its training's evaluation at step 900).")


def test_model_summary_says_which_model_a_going_run_trains(session):
    """The header said 'Inspecting trained on task: modular addition ... val loss 47.008' while an induction run
    trained: it names the model the tabs show and, while a run trains, that run's model and when the tabs show it."""
    from types import SimpleNamespace

    inspected = Session(Inspected(Checkpoint(session.inspected.model, session.inspected.tokenizer),
                                  "trained on task: modular addition (900 steps)"))
    run = SimpleNamespace(active=True, corpus="task: induction", progress=SimpleNamespace(step=340, requested="running"))
    inspected.workspace.run = run
    header = models.model_summary(inspected)
    assert header.startswith("Inspecting **trained on task: modular addition (900 steps)**")
    assert header.endswith(" Training now: **task: induction**: the other tabs show that model once you pause the "
                           "run or it ends.")
    run.progress.step = 341  # polled every second: a header that changed with the step set off its listeners each time
    assert models.model_summary(inspected) == header
    for state in ("paused", "stopped"):  # paused, the tabs show the run's model: the header names it already
        run.progress.requested = state
        assert "Training now" not in models.model_summary(inspected)
    run.progress.requested, run.active = "running", False  # ended
    assert "Training now" not in models.model_summary(inspected)


def test_next_token_distribution(session):
    dist, temp, caption = sampling.distribution_view(session, PROMPT, 1.0, 0, 1.0, 0.0)
    assert isinstance(dist, Figure) and isinstance(temp, Figure)
    for fig in (dist, temp):
        assert_plotly_would_send_the_same(fig)
    before = np.asarray(dist.data[0].y, dtype=float)
    assert len(before) == session.inspected.tokenizer.vocab_size
    assert before.sum() == pytest.approx(1.0, abs=1e-3)
    assert "kept" in caption.lower() or "token" in caption.lower()


def test_top_p_zero_keeps_exactly_one_token(session):
    dist, _, caption = sampling.distribution_view(session, PROMPT, 1.0, 0, 0.0, 0.0)
    after = np.asarray(dist.data[1].y, dtype=float)
    assert np.count_nonzero(after) == 1 and after.max() == pytest.approx(1.0)
    assert "kept 1 of" in caption


@pytest.mark.slow
def test_comparison_has_one_column_per_row(session):
    rows = sampling.DEFAULT_COMPARISON[:3]
    html = sampling.comparison_view(session, PROMPT, rows, 12, 0)
    assert html.count("class='te-col'") == 3
    assert html.count("distinct-2") == 3 and "T=0.5" in html


@pytest.mark.slow
def test_steps_view_running_logprob(session):
    rows, text = sampling.steps_view(session, PROMPT, 1.0, 0, 1.0, 0.0, 6, 0)
    assert [r[0] for r in rows] == list(range(1, 7))
    running = np.cumsum([np.log(r[3]) for r in rows])  # model probabilities -> running log-prob
    np.testing.assert_allclose([r[4] for r in rows], running, atol=0.02)
    assert text.startswith("<p class='te-caption'>Generated 6 tokens") and text.count("<span title='p=") == 6


def test_data_view_outputs(session):
    summary, vocab, sample, fig, split, batch = data.data_view(session, "first-names", None, "char", 512)
    assert "first-names" in summary and "tokens" in summary
    assert session.workspace.data.name == "first-names"
    assert len(vocab) == session.workspace.data.tokenizer.vocab_size and len(vocab[0]) == 3
    assert sample and isinstance(fig, Figure)
    assert "Training split" in split
    assert len(batch) == data.BATCH_SHOWN * data.WINDOW_SHOWN
    for b in range(data.BATCH_SHOWN):  # each position's context extends the previous one by one token
        contexts = [r[2] for r in batch if r[0] == b]
        assert all(later.startswith(earlier) for earlier, later in zip(contexts, contexts[1:]))


@pytest.mark.parametrize("task", ["task: modular addition", "task: sort"])
def test_a_tasks_token_chart_shows_its_first_whole_examples(session, task):
    """The Data tab's token bars on a task showed one example (its three input tokens)."""
    _, _, sample, fig, _, _ = data.data_view(session, task, None, "char", 512)
    bars = fig.data[0]
    examples = sample.splitlines()
    n_shown = bars.customdata[-1]
    assert n_shown >= 3 and len(bars.x) <= 50 and len(bars.x) == len(bars.customdata)
    read = " ".join(label.split(":", 1)[1] for label in bars.x)  # each example as the model reads it, in order
    assert read == " ".join(line.replace(" → ", " ") for line in examples[:n_shown])


@pytest.mark.parametrize("corpus", ["task: modular addition", "task: repeated random tokens", "first-names"])
def test_the_data_tab_shows_only_what_its_data_reads(session, corpus):
    """On a task the Data tab showed a tokenizer and a '10 % held out' choice that the task ignores, a chart heading
    'first 50 tokens' over a title 'first 12 examples', and an empty vocabulary 'count' column."""
    kind, bpe_vocab, val_split, note, chart = text_controls(corpus, None)
    task = corpus.startswith("task: ")
    assert [u["visible"] for u in (kind, bpe_vocab, val_split, note)] == [not task] * 3 + [task]
    _, vocab, _, fig, _, _ = data.data_view(session, corpus, None, "char", 512)
    title, heading = fig.layout.title.text, chart["label"]
    if "examples" in title:  # heading and title name the same unit; the title adds how many
        assert heading.endswith("the first examples") and re.search(r"the first \d+ examples", title)
    else:
        assert heading.endswith(f"the first {len(fig.data[0].x)} tokens")
    counts = [row[2] for row in vocab]
    assert all(isinstance(c, int) for c in counts) and sum(counts) > 0 and max(counts) > 0


def test_an_upload_shows_the_text_controls_whatever_the_corpus(tmp_path):
    kind, _, _, note, _ = text_controls("task: sort", str(tmp_path / "mine.txt"))
    assert kind["visible"] and not note["visible"]


def test_a_tasks_vocabulary_counts_every_token_of_its_examples(session):
    _, vocab, *_ = data.data_view(session, "task: sort", None, "char", 512)
    d = session.workspace.data
    n_tokens = (len(d.train) + len(d.val)) * (d.train.shape[-1] + 1)  # an example: its input row and last target
    assert sum(row[2] for row in vocab) == n_tokens


def test_model_summary_and_save_load_roundtrip(session):
    assert "tiny" in models.model_summary(session) and f"{N_LAYERS} layers" in models.model_summary(session)
    path = models.save_zip(session)
    other = tiny_session(seed=5)
    summary = models.load_zip(other, path)
    assert "uploaded" in summary
    assert same_weights(weights(other), weights(session))


def test_slider_maxima_follow_the_model(session):
    assert models.slider_maxima(session) == {"layer": N_LAYERS - 1, "hidden": N_LAYERS, "head": N_HEADS - 1,
                                             "query": BLOCK - 1}


@pytest.mark.slow
def test_every_model_sized_slider_is_resized_when_the_model_changes():
    from explorer.tabs.common import RANGE_CLASS
    from explorer.ui import build_app
    demo = build_app()
    sized = {b._id for b in demo.blocks.values() if isinstance(b, gr.Slider)
             and any(c.startswith(RANGE_CLASS) for c in b.elem_classes or [])}
    # attention layer/head/query, Heads examples layer, film-strip layer/head and circuits layer/head, residual,
    # embeddings, FFN layer, Features token, Building blocks layer, Experiments position, attribution's position,
    # patching's layer, and the Graph tab's QK layer and head
    assert len(sized) == 18
    resize = [d for d in demo.fns.values() if sized <= {b._id for b in d.outputs}]
    assert len(resize) == 1 and [t[1] for t in resize[0].targets] == ["change"]
    assert resize[0].name == "follow_model"  # the one event that follows a model change


@pytest.mark.parametrize("minimum, maximum", [(0, 0), (0, 3), (-1, 0), (-1, -1)])
def test_a_resized_slider_is_one_gradio_accepts(minimum, maximum):
    """Gradio rebuilds a slider from its arguments and the update: 0..0 (a 1-layer model) must not be refused."""
    from explorer.ui import one_choice_or_range
    slider = gr.Slider(minimum, minimum + 5, value=minimum, step=1, render=False)
    update = {k: v for k, v in one_choice_or_range(minimum, maximum).items() if k != "__type__"}
    rebuilt = gr.Slider(**{**slider.constructor_args, **update, "render": False})
    assert rebuilt.interactive is (maximum > minimum)
    assert rebuilt.maximum == max(maximum, minimum + 1)


def test_a_slider_past_the_new_models_range_moves_into_it():
    """SmolLM2's head 8, then a 2-head model: the slider stands at 1 (it showed 8 on a 0..1 range)."""
    from explorer.ui import one_choice_or_range
    assert one_choice_or_range(0, 1, 8)["value"] == 1
    assert "value" not in one_choice_or_range(0, 3, 2)  # in range: the student's choice stays
    assert one_choice_or_range(-1, 5, -3)["value"] == -1


# ---------------------------------------------------------------- bad prompts

def test_empty_prompt_is_a_readable_error(session):
    for prompt in ("", "   ", " \t", None):
        with pytest.raises(UserError, match="Type a prompt"):
            attention.attention_view(session, prompt, 0, 0, -1)


def test_a_line_break_alone_is_a_prompt(session):
    """seed-003's names model starts each name after a line break: "\n" is its prompt for new names."""
    out = attention.attention_view(session, "\n", 0, 0, -1)
    assert len([t for t in out[0].data if t.type == "heatmap"]) == N_LAYERS * N_HEADS


def test_unknown_characters_are_named_and_can_be_dropped(session):
    with pytest.raises(UserError) as err:
        residual.residual_view(session, "Zebra€ First", 0)
    message = str(err.value)
    assert "'Z'" in message and "'€'" in message and "Drop unknown characters" in message
    out = residual.residual_view(session, "Zebra€ First", 0, "norm", drop_unknown=True)
    assert isinstance(out[0], Figure)
    for fig in (out[0],):
        assert_plotly_would_send_the_same(fig)


def test_prompt_of_only_unknown_characters(session):
    with pytest.raises(UserError, match="Nothing is left"):
        ffn.ffn_view(session, "ZZZ", 0, 0, drop_unknown=True)


def test_long_prompt_is_cropped_not_refused(session):
    long_prompt = TEXT[: BLOCK * 2]
    with pytest.warns(UserWarning, match=f"only the last {BLOCK}"):
        grid, *_ = attention.attention_view(session, long_prompt, 0, 0, -1)
    assert np.asarray(grid.data[0].z).shape == (BLOCK, BLOCK)


def test_sampling_settings_errors(session):
    with pytest.raises(ValueError, match="Temperature must be between"):
        sampling.distribution_view(session, PROMPT, -0.5, 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="Top-p must be between 0 and 1"):
        sampling.distribution_view(session, PROMPT, 1.0, 0, 1.5, 0.0)
    with pytest.raises(ValueError, match="Temperature must be between"):
        sampling.steps_view(session, PROMPT, -1, 0, 1.0, 0.0, 5, 0)
    with pytest.raises(ValueError, match="Seed must be between 0 and 4,294,967,295"):
        sampling.steps_view(session, PROMPT, 1.0, 0, 1.0, 0.0, 5, 2**70)
    with pytest.raises(ValueError, match="Top-k must be a number, not NaN"):
        sampling.distribution_view(session, PROMPT, 1.0, float("nan"), 1.0, 0.0)


@pytest.mark.parametrize("rows, message", [
    ([], "at least one row"),
    ([[None, None, None, None]], "at least one row"),
    ([[1.0, 0, 1.0, 0.0]] * 7, "at most 6"),
    ([[1.0, 0, 1.0, 0.0], ["hot", 0, 1.0, 0.0]], "Row 2: Temperature must be a number, not the text"),
    ([[1.0, 0, 2.0, 0.0]], "Row 1: Top-p must be between 0 and 1"),
    ([[1.0, 0, 1.0, 0.0, 5]], "Row 1 has 5 values"),
    ("a table", "must be a list of rows"),
])
def test_comparison_table_errors(session, rows, message):
    with pytest.raises(UserError, match=message):
        sampling.comparison_view(session, PROMPT, rows, 10, 0)


# ---------------------------------------------------------------- bad uploads

def corrupt_zips(tmp_path):
    random_bytes = tmp_path / "random.zip"
    random_bytes.write_bytes(np.random.default_rng(0).bytes(4096))
    text = tmp_path / "notes.zip"
    text.write_text("these are my notes, not a model\n")
    junk = tmp_path / "junk.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("config.json", "{not json")
    junk.write_bytes(buffer.getvalue())
    return [random_bytes, text, junk]


def test_corrupt_checkpoint_upload_leaves_model_alone(session, tmp_path):
    before, version = weights(session), session.inspected.version
    model = session.inspected.model
    for path in corrupt_zips(tmp_path):
        with pytest.raises(ValueError) as err:
            models.load_zip(session, str(path))
        assert "Traceback" not in str(err.value) and len(str(err.value)) > 20, str(err.value)
        assert session.inspected.model is model and session.inspected.version == version
    assert same_weights(weights(session), before)
    with pytest.raises(UserError, match="Choose a .zip"):
        models.load_zip(session, None)


def test_bad_text_uploads_on_data_tab(session, tmp_path, monkeypatch):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    binary = tmp_path / "image.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café au lait, encore un café s'il vous plaît".encode("latin-1"))
    for path, message in ((empty, "empty"), (binary, "binary"), (latin1, "UTF-8")):
        with pytest.raises(ValueError, match=message):
            data.data_view(session, "shakespeare", str(path), "char", 512)
    assert session.workspace.data is None
    monkeypatch.setattr(LIMITS, "max_upload_mb", 0.0001)
    big = tmp_path / "big.txt"
    big.write_text("to be or not to be " * 100)
    with pytest.raises(UserError, match="the limit is"):
        data.data_view(session, "shakespeare", str(big), "char", 512)


def test_good_text_upload(session, tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("the cat sat on the mat. " * 20)
    summary, *_ = data.data_view(session, "shakespeare", str(path), "word", 512)
    assert "mine.txt" in summary and session.workspace.data.tokenizer.vocab_size == 5  # the cat sat on mat.


# ---------------------------------------------------------------- the Train tab's controls

CHOICES = ("shakespeare", "char", 512)  # the Data tab's defaults: corpus, kind, bpe_vocab


@pytest.mark.slow  # counting prepares the corpus's vocabulary, as test_param_count_view
def test_an_older_count_request_is_skipped(session):
    """Counts the page stamped (its clock at sending): one sent before a count already answered gets None (the line
    keeps the newer count); an unstamped one (the API) is always answered."""
    newer = train.newest_param_count(session, 2_000.0, *CHOICES, *arch_values(n_layers=1))
    assert newer == train.param_count_view(session, *CHOICES, *arch_values(n_layers=1))
    assert train.newest_param_count(session, 1_000.0, *CHOICES, *arch_values(n_layers=3)) is None
    assert train.newest_param_count(session, None, *CHOICES, *arch_values(n_layers=3)).startswith("**")
    assert train.newest_param_count(session, 3_000.0, *CHOICES, *arch_values(n_layers=3)) != newer


@pytest.mark.slow
def test_param_count_view(session):
    assert train.param_count_view(session, *CHOICES, *arch_values()).startswith("**")
    bad = train.param_count_view(session, *CHOICES, *arch_values(d_model=18, n_heads=4))
    assert bad.startswith("⚠️") and "divisible" in bad
    huge = train.param_count_view(session, *CHOICES, *arch_values(n_layers=8, d_model=512, block_size=256))
    assert "over this server's limit" in huge
    empty = train.param_count_view(session, *CHOICES, *arch_values(d_model=None))
    assert empty.startswith("⚠️") and "d_model is empty" in empty
    too_many_words = train.param_count_view(session, "surnames", "word", 512, *arch_values())
    assert too_many_words.startswith("⚠️") and "distinct words" in too_many_words  # as Start would refuse it


@functools.cache
def big_vocabulary() -> WordTokenizer:
    return build_tokenizer("word", load_corpus("shakespeare-full"))  # 64,952 words, more than SmolLM2's 49,152


def big_vocabulary_session() -> Session:
    """A session inspecting a model whose vocabulary (every word of Shakespeare) is none of the choices'."""
    tok = big_vocabulary()
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=8, d_model=16, n_heads=2, n_layers=1)
    return Session(Inspected(Checkpoint(GPT(cfg).eval(), tok), "inspected"))


@pytest.mark.slow
@pytest.mark.parametrize("choices", [("first-names", "char", 512), ("welcome", "bpe", 4096),
                                     ("toy-words", "word", 512), ("shakespeare", "bpe", 320),
                                     ("task: modular addition", "char", 512)])
def test_size_line_counts_the_vocabulary_start_uses(choices):
    """Before any text is prepared and after another one was, the line counts the model Start would build."""
    session = big_vocabulary_session()
    for prepared_first in (None, "first-names" if choices[0] != "first-names" else "welcome"):
        if prepared_first:
            data.data_view(session, prepared_first, None, "char", 512, "none")
        line = train.param_count_view(session, *choices, *arch_values())
        use_untrained_model(session, *choices, *arch_values(), "none")  # Start's data and model path
        model = session.inspected.model
        assert f"**{model.num_params():,} parameters**" in line and f"vocabulary {model.cfg.vocab_size})" in line
        assert model.cfg.vocab_size != big_vocabulary().vocab_size


@pytest.mark.slow
def test_size_line_of_the_classroom_preset_after_a_big_vocabulary(session):
    """The walk's case: after a model with a large vocabulary, the classroom preset on characters is in bounds."""
    arch = preset_control_values("classroom")
    line = train.param_count_view(big_vocabulary_session(), *CHOICES, *[arch[k] for k in train.ARCH_FIELDS])
    cfg = train.model_config(session, {k: arch[k] for k in train.ARCH_FIELDS}, big_vocabulary().vocab_size)
    assert count_params(cfg) > LIMITS.max_params  # what the line said when it counted the inspected vocabulary
    assert "vocabulary 64)" in line and "over this server's limit" not in line  # Shakespeare's 64 characters


def test_size_line_counts_an_uploaded_text(session, tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("the cat sat on the mat. " * 40)
    data.data_view(session, "shakespeare", str(path), "word", 512)
    line = train.param_count_view(session, "first-names", "char", 512, *arch_values())
    use_untrained_model(session, "first-names", "char", 512, *arch_values())  # the upload stays
    text, model = session.workspace.data, session.inspected.model
    assert text.name == "mine.txt" and model.cfg.vocab_size == text.tokenizer.vocab_size
    assert f"**{model.num_params():,} parameters**" in line
    assert f"vocabulary {text.tokenizer.vocab_size})" in line


@pytest.mark.slow
def test_choices_vocabulary_is_the_prepared_tokenizers():
    """choices_vocab_size never tokenizes a long corpus: it must still agree with the tokenizer a corpus is prepared
    with (text_tokenizer, as data.prepared builds it; not encoding the text with it saves 10 s of shakespeare-full)."""
    assert data.prepared("first-names", "bpe", 512)[0].vocab_size == data.text_tokenizer(
        load_corpus("first-names"), "bpe", 512).vocab_size
    for corpus in CORPORA:
        for kind, bpe_vocab in (("char", 512), ("word", 512), ("bpe", 4096), ("bpe", 512)):
            try:
                prepared = data.text_tokenizer(load_corpus(corpus), kind, bpe_vocab).vocab_size
            except ValueError as err:
                with pytest.raises(ValueError, match=re.escape(str(err))):
                    data.choices_vocab_size(corpus, kind, bpe_vocab)
                continue
            assert data.choices_vocab_size(corpus, kind, bpe_vocab) == prepared, (corpus, kind, bpe_vocab)


def test_start_training_refuses_bad_settings(session, monkeypatch):
    with pytest.raises(ValueError, match="divisible"):
        train.start_training(session, "first-names", "char", 512, *train_values(d_model=18, n_heads=4))
    with pytest.raises(ValueError, match="Learning rate must be between"):
        train.start_training(session, "first-names", "char", 512, *train_values(lr=-1))
    for field, value, message in (("lr", 10, "Learning rate must be between"), ("n_layers", 2.5, "whole number"),
                                  ("weight_decay", float("inf"), "finite"), ("batch_size", 0, "Batch size")):
        with pytest.raises(UserError, match=message):
            train.start_training(session, "first-names", "char", 512, *train_values(**{field: value}))
    monkeypatch.setattr(LIMITS, "max_params", 1000)
    with pytest.raises(UserError, match="limit here is 1,000"):
        train.start_training(session, "first-names", "char", 512, *train_values())
    monkeypatch.setattr(LIMITS, "max_steps", 10)
    with pytest.raises(UserError, match="more than this server allows"):
        train.start_training(session, "first-names", "char", 512, *train_values())
    assert session.workspace.run is None


def test_controls_without_a_run(session):
    for action in ("pause", "resume", "stop"):
        with pytest.raises(UserError, match="press Start"):
            train.control(session, action)
    shown = train.poll(session)
    assert shown["loss"] == "" and "No training run" in shown["status"] and not shown["running"]
    assert "probe text" in shown["live_caption"] and shown["progress"] == "" and not shown["progress_note"]
    with pytest.raises(UserError, match="no training snapshots"):
        history.snapshot_view(session, 0.5)
    skipped, said = history.snapshot_when_opened(session, 1)  # opening the box: the sentence under it, no toast
    assert "no training snapshots" in said and skipped.__class__.__name__ != "Figure"


# ---------------------------------------------------------------- training

def test_training_runs_to_the_end_and_is_adopted(training_sessions):
    s = training_sessions()
    message = train.start_training(s, "first-names", "char", 512, *train_values())
    assert "Training started" in message and "first-names" in message
    shown = wait_until_done(s)
    status, live = shown["status"], shown["live"]
    assert not shown["running"] and "finished" in status and "30 / 30" in status
    assert shown["live_caption"].startswith("Step 30 on the probe text. The strongest previous-token head is L")
    traces = {t["name"]: t for t in json.loads(shown["loss"])["data"]}
    assert {"train loss (each batch)", "validation loss"} <= set(traces)
    assert max(traces["train loss (each batch)"]["x"]) == 30
    assert live.startswith("{") and '"data"' in live  # the live attention figure as JSON
    summary = models.model_summary(s)
    assert "trained on first-names (30 steps)" in summary and "val loss" in summary
    assert s.inspected.model.cfg.block_size == 8 and s.inspected.tokenizer is s.workspace.data.tokenizer
    out = attention.attention_view(s, "anna", 0, 0, -1)  # the adopted model answers on the other tabs
    assert len([t for t in out[0].data if t.type == "heatmap"]) == 2
    grid, caption = history.snapshot_view(s, 1.0)
    assert isinstance(grid, Figure) and "Step **30**" in caption
    assert history.snapshot_when_opened(s, 1.0)[1] == caption  # opening the box draws the slider's point


def test_pause_resume_stop_from_another_thread(training_sessions):
    s = training_sessions()
    train.start_training(s, "first-names", "char", 512, *train_values(max_steps=20_000))
    with pytest.raises(UserError, match="already going"):
        train.start_training(s, "first-names", "char", 512, *train_values())
    wait_for_steps(s, 3)
    assert "Pausing" in train.control(s, "pause")
    wait_for_state(s, "paused")
    steps = s.workspace.run.progress.step
    status = train.poll(s)["status"]
    assert "paused" in status and steps > 0
    assert f"({steps} steps)" in models.model_summary(s)  # a copy of the paused model is inspected
    assert s.inspected.model is not s.workspace.run.progress.model
    paused_copy = weights(s)
    assert same_weights(paused_copy, {k: v for k, v in s.workspace.run.progress.model.state_dict().items()})
    for _ in range(20):  # really paused: polling does not move it, the status keeps the step
        assert f"step **{steps:,} /" in train.poll(s)["status"] and s.workspace.run.progress.step == steps
    assert train.control(s, "resume") == "Resumed."
    wait_for_steps(s, steps + 1)
    assert "Stopping" in train.control(s, "stop")
    status = wait_until_done(s)["status"]
    final = s.workspace.run.progress.step
    assert "stopped" in status and steps < final < 20_000
    assert [m["step"] for m in s.workspace.run.progress.history] == list(range(1, final + 1))  # no step lost or unseen
    assert not same_weights(paused_copy, weights(s))  # the inspected model is now the stopped one


def test_two_sessions_are_independent(training_sessions):
    a, b = training_sessions(seed=0), training_sessions(seed=0)
    b_before = weights(b)
    b_view = attention.attention_view(b, PROMPT, 1, 1, -1)[1].data[0].z
    train.start_training(a, "first-names", "char", 512, *train_values())
    assert b.workspace.run is None and "No training run" in train.poll(b)["status"]
    wait_until_done(a)
    assert "trained" in models.model_summary(a) and "trained" not in models.model_summary(b)
    assert same_weights(weights(b), b_before)
    assert np.array_equal(attention.attention_view(b, PROMPT, 1, 1, -1)[1].data[0].z, b_view)
    assert b.workspace.data is None


def test_server_wide_trainer_limit(training_sessions, monkeypatch):
    monkeypatch.setattr(LIMITS, "max_trainers", 1)
    a, b = training_sessions(), training_sessions()
    train.start_training(a, "first-names", "char", 512, *train_values(max_steps=20_000))
    with pytest.raises(UserError, match="The training slot of this server is in use"):
        train.start_training(b, "first-names", "char", 512, *train_values())
    assert b.workspace.run is None
    train.control(a, "stop")
    wait_until_done(a)
    train.start_training(b, "first-names", "char", 512, *train_values())  # the slot is free again
    wait_until_done(b)


# ---------------------------------------------------------------- errors.friendly

def test_friendly_turns_our_errors_into_their_message():
    def bad(x):
        raise UserError("the prompt is empty: type something.")

    with pytest.raises(gr.Error) as err:
        friendly(bad)(1)
    assert err.value.message == "The prompt is empty: type something."


def test_friendly_hides_a_library_value_error_behind_a_reference(caplog):
    def nan_slider():
        return int(float("nan"))  # what an unchecked NaN slider value used to show the user

    with pytest.raises(gr.Error) as err:
        friendly(nan_slider)()
    message = err.value.message
    assert "NaN" not in message and "convert" not in message
    ref = re.search(r"reference ([0-9a-f]{6})", message).group(1)
    assert f"[ref {ref}]" in caplog.text and "cannot convert float NaN" in caplog.text  # logged for the admin


def test_friendly_hides_unexpected_exceptions():
    def broken():
        raise RuntimeError("tensor shapes do not match")

    with pytest.raises(gr.Error) as err:
        friendly(broken)()
    message = err.value.message
    assert "Something went wrong" in message and "still running" in message
    assert "Traceback" not in message and "File " not in message


def test_friendly_on_a_real_callback(session):
    with pytest.raises(gr.Error, match="Type a prompt"):
        friendly(attention.attention_view)(session, "", 0, 0, -1)
    assert friendly(models.model_summary)(session).startswith("Inspecting")


@pytest.mark.slow
def test_a_pretrained_models_first_open_is_announced_by_every_way_in(session):
    """SmolLM2's first open showed only Gradio's timers for 8-23 s: the Use button, a link and a lesson step that
    open it show a sentence first; a model already open here, or a checkpoint of ours, none."""
    from explorer.callbacks import lessons, links, models
    from explorer.state import shipped
    from explorer.ui import build_app

    build_app()  # registers the controls a lesson's settings name
    smollm2 = models.opening_note(session, "smollm2-135m")
    if shipped.is_open("smollm2-135m"):  # another test of this process opened it: it opens at once now
        assert not smollm2.visible
    else:
        assert smollm2.visible and smollm2.value.startswith("**Opening SmolLM2-135M-Instruct** (135 million parameters")
        assert "about 10 s the first time" in smollm2.value
    assert links.opening_for_link(session, {"model": "smollm2-135m", "tab": "attention"}).value == smollm2.value
    assert lessons.opening_for_lesson(session, "a-real-model").value == smollm2.value  # its step 1 opens it
    last = len(lessons.load_lesson("who-wrote-the-answer").steps) - 1
    step = {"lesson": "who-wrote-the-answer", "step": last - 1}
    assert lessons.opening_for_step(session, step, +1).value == smollm2.value  # Next onto "A real model"
    assert not lessons.opening_for_step(session, step, -1).visible  # Back: the Shakespeare model's steps
    assert not lessons.opening_for_step(session, None, +1).visible  # no lesson open: move() says so itself
    # what the page shows at the click of Back and Next, before either moves
    assert json.loads(lessons.step_notes(session, step)) == {"back": "", "next": smollm2.value if smollm2.visible
                                                             else ""}
    assert json.loads(lessons.step_notes(session, None)) == {"back": "", "next": ""}
    for name in ("first-names", "", None, "no-such-model"):
        assert not models.opening_note(session, name).visible, name
    shipped.load_shipped("first-names")
    assert shipped.is_open("first-names")
