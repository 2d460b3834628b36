"""Issue #41: a refused Train-tab action leaves its sentence in the status line until the next action, and a new
run keeps the previous one's curves on the same axes, faded, for the comparison a lesson asks for (with and
without weight decay); the session keeps one previous run at most, its evaluations thinned."""
import json
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest

from explorer.callbacks import train
from explorer.callbacks.presets import preset_control_values
from explorer.callbacks.train_comparison import EVALS_KEPT, kept_run, previous_label, setting_changes
from explorer.common.errors import UserError
from explorer.figures.common import FADED_OPACITY
from explorer.figures.progress import progress_figure
from explorer.figures.training import loss_figure
from explorer.state.session import REGISTRY
from explorer.state.workspace import StatusNote
from explorer.tabs.binding import bind
from model_core import GPTConfig
from model_core.training.train_config import TrainConfig
from tests.helpers import assert_plotly_would_send_the_same, tiny_session
from tests.trainer_helpers import train_values, wait_for_steps, wait_until_done

PREVIOUS = "previous run"
LESSONS = Path(__file__).resolve().parents[1] / "explorer" / "assets" / "lessons"


def traces(shown: dict, chart: str) -> list[dict]:
    return json.loads(shown[chart])["data"]


def faded_traces(shown: dict, chart: str) -> list[dict]:
    return [t for t in traces(shown, chart) if t["name"].startswith(PREVIOUS)]


# ---------------------------------------------------------------- refusals stay in the status line

def test_a_refused_start_stays_in_the_status_line_until_the_next_action():
    session = tiny_session()
    with pytest.raises(UserError, match="Learning rate must be between") as refused:
        train.start_training(session, "first-names", "char", 512, *train_values(lr=-1))
    for _ in range(3):  # every poll of the page's timer keeps it
        assert train.poll(session)["status"].startswith(f"⚠️ {refused.value}\n\nNo training run yet")
    with pytest.raises(UserError, match="press Start first"):  # the next action replaces it with its own
        train.control(session, "stop")
    status = train.poll(session)["status"]
    assert status.startswith("⚠️ No training run yet: press Start first.") and "Learning rate" not in status


def test_the_page_gets_the_same_sentence_as_the_status_line():
    """Through bind (the page's and the API's way in) the refusal is a gr.Error with the sentence the line keeps."""
    session = tiny_session()
    REGISTRY._sessions["refused-start"] = session
    try:
        with pytest.raises(gr.Error) as err:
            bind(train.start_training)(SimpleNamespace(session_hash="refused-start"), "first-names", "char", 512,
                                       *train_values(n_heads=3))
    finally:
        REGISTRY._sessions.pop("refused-start", None)
    assert "divisible" in err.value.message and session.workspace.note.text == err.value.message
    assert train.poll(session)["status"].startswith(f"⚠️ {err.value.message}")
    assert err.value.title == "Cannot do that"  # a refusal, not a crash: not titled "Error"


def test_a_refusal_toast_shows_no_markdown_the_status_line_keeps_it():
    from explorer.common.errors import refusal

    said = "A run is already going, so Start started nothing. Press **Stop**, then **Start** again."
    assert refusal(said).message == "A run is already going, so Start started nothing. Press Stop, then Start again."


def test_a_failure_nobody_wrote_a_sentence_for_is_titled_error():
    from explorer.common.errors import friendly

    def broken():
        raise KeyError("internal")
    with pytest.raises(gr.Error) as err:
        friendly(broken)()
    assert err.value.title == "Error" and "internal" not in err.value.message


def test_an_unexpected_failure_is_noted_with_the_reference_it_logged(monkeypatch, caplog):
    session = tiny_session()
    monkeypatch.setattr(train, "prepare_controls_data", lambda *a: 1 / 0)
    with pytest.raises(gr.Error) as err:
        train.start_training(session, "first-names", "char", 512, *train_values())
    reference = err.value.message.split("reference ")[1][:6]
    assert f"[ref {reference}]" in caplog.text and "ZeroDivisionError" in caplog.text
    assert train.poll(session)["status"].startswith(f"⚠️ {err.value.message}")


def test_a_note_written_while_a_run_went_goes_with_that_run():
    going, ended = SimpleNamespace(active=True), SimpleNamespace(active=False)
    assert StatusNote("refused", going).shown and StatusNote("refused").shown
    assert not StatusNote("refused", ended).shown


def test_start_while_a_run_goes_says_what_to_do_in_the_status_line(training_sessions):
    session = training_sessions()
    train.start_training(session, "first-names", "char", 512, *train_values(max_steps=20_000))
    wait_for_steps(session, 2)
    with pytest.raises(UserError, match="already going"):
        train.start_training(session, "first-names", "char", 512, *train_values(weight_decay=0.0))
    for _ in range(3):  # the timer's polls keep it while the run goes
        status = train.poll(session)["status"]
        assert status.startswith("⚠️ A run is already going (training at step ")
        assert "press **Stop**, then **Start** again" in status and "**running** · step" in status
    assert "Stopping" in train.control(session, "stop")  # the next action
    assert "already going" not in train.poll(session)["status"]
    wait_until_done(session)
    with pytest.raises(UserError, match=r"This run has ended already \(at step \d+\): press Start for a new one"):
        train.control(session, "stop")  # a second Stop: the run is there, and over


# ---------------------------------------------------------------- the previous run, faded

def test_a_second_run_draws_the_first_faded_on_the_same_axes_and_a_third_replaces_it(training_sessions):
    session = training_sessions()
    start = lambda **settings: train.start_training(session, "first-names", "char", 512,  # noqa: E731
                                                    *train_values(max_steps=20, **settings))
    start(weight_decay=0.5)
    first = wait_until_done(session)
    first_val = [t for t in traces(first, "loss") if t["name"] == "validation loss"][0]
    assert not faded_traces(first, "loss") and "Faded" not in first["status"]

    start(weight_decay=0.0)
    at_start = train.poll(session)  # before the second run has drawn anything, the first is there to compare
    label = "previous run (weight decay 0.5)"
    for chart in ("loss", "progress"):
        faded = faded_traces(at_start, chart)
        assert faded and {t["name"] for t in faded} == {label} and all(t["opacity"] < 1 for t in faded)
        assert [t["showlegend"] for t in faded].count(True) == 1  # one legend entry shows or hides them all
        assert json.loads(at_start[chart])["layout"]["xaxis"]["range"] == [0, 20]  # the first run's whole length
    assert f"Faded on the charts, for comparison: the {label}." in at_start["status"]
    second = wait_until_done(session)
    loss = traces(second, "loss")
    kept_val = [t for t in faded_traces(second, "loss") if "validation loss" in t["hovertemplate"]][0]
    assert kept_val["x"] == first_val["x"] and kept_val["y"] == first_val["y"]  # the first run's own curve
    assert {"train loss (each batch)", "train loss (evaluated)", "validation loss"} <= {t["name"] for t in loss}
    assert all(t.get("opacity", 1) == 1 for t in loss if t["name"] in ("train loss (evaluated)", "validation loss"))
    assert {t["name"] for t in traces(second, "progress")} - {label}  # the second run's own measures

    start(weight_decay=0.1)  # one previous run at most: the second's replaces the first's
    third = wait_until_done(session)
    assert session.workspace.previous.label == "previous run (weight decay 0.0)"
    faded = faded_traces(third, "loss")
    assert {t["name"] for t in faded} == {"previous run (weight decay 0.0)"} and len(faded) == 2  # train, val
    second_val = [t for t in loss if t["name"] == "validation loss"][0]
    assert [t for t in faded if "validation loss" in t["hovertemplate"]][0]["y"] == second_val["y"]


def fake_run(evals: list, corpus: str = "first-names", vocab_size: int = 27, weight_decay: float = 2.0):
    """What kept_run reads of a TrainingRun."""
    model = SimpleNamespace(cfg=GPTConfig(vocab_size=vocab_size, block_size=8, d_model=16, n_heads=2, n_layers=1))
    cfg = TrainConfig(weight_decay=weight_decay, device="cpu")
    return SimpleNamespace(corpus=corpus, progress=SimpleNamespace(evals=evals, model=model, cfg=cfg, has_val=True))


def test_the_previous_run_keeps_a_bounded_number_of_evaluations():
    evals = [{"step": s, "train_loss": 1.0, "val_loss": 1.5} for s in range(0, 50_000, 10)]
    run = fake_run(evals)
    kept = kept_run(run, run.progress.model.cfg, TrainConfig(weight_decay=0.0, device="cpu"), "first-names")
    assert len(kept.evals) <= EVALS_KEPT and kept.evals[0] is evals[0] and kept.evals[-1] is evals[-1]
    steps = [e["step"] for e in kept.evals]
    assert steps == sorted(steps) and max(np.diff(steps)) <= 2 * min(np.diff(steps))  # evenly spread
    assert kept.label == "previous run (weight decay 2.0)" and kept.last_step == 49_990


def test_only_a_run_on_the_same_text_and_vocabulary_is_kept_to_compare():
    evals = [{"step": 0, "train_loss": 3.0, "val_loss": 3.1}]
    cfg, tc = fake_run(evals).progress.model.cfg, TrainConfig(device="cpu")
    assert kept_run(fake_run(evals, corpus="shakespeare"), cfg, tc, "first-names") is None
    assert kept_run(fake_run(evals, vocab_size=65), cfg, tc, "first-names") is None
    assert kept_run(fake_run([]), cfg, tc, "first-names") is None  # nothing drawn yet
    assert kept_run(None, cfg, tc, "first-names") is None


def test_the_grokking_lessons_second_run_names_the_first_as_its_step_says():
    """The lesson's step 3 (the preset with weight decay 0) quotes the legend entry the first run gets."""
    session = tiny_session()
    values = preset_control_values("grokking")
    train.prepare_controls_data(session, values["corpus"], values["kind"], 512, values["val_split"])
    cfg = train.model_config(session, {k: values[k] for k in train.ARCH_FIELDS})
    optim = {k: values[k] for k in train.OPTIM_FIELDS}
    first = fake_run([{"step": 0, "train_loss": 4.1, "val_loss": 4.1}], session.workspace.data.name)
    first.progress.model.cfg, first.progress.cfg = cfg, train.train_config(session, optim)
    label = kept_run(first, cfg, train.train_config(session, optim | {"weight_decay": 0}), first.corpus).label
    assert label == "previous run (weight decay 2.0)"
    step = LESSONS.joinpath("grokking.md").read_text().split("## Without weight decay")[1].split("\n## ")[0]
    assert f"“{label}”" in " ".join(step.split())


def test_the_legend_names_the_settings_that_changed():
    assert previous_label({}) == "previous run (same settings)"
    assert previous_label({"weight_decay": 2.0, "lr": 0.001}) == "previous run (weight decay 2.0, learning rate 0.001)"
    assert previous_label({"weight_decay": 2.0, "lr": 0.001, "decay_embeddings": True}).endswith(", …)")
    assert previous_label({"decay_embeddings": True, "norm_placement": "post"}) == \
        "previous run (decay embeddings on, norm placement post)"
    assert setting_changes({"lr": 0.01, "seed": 1}, {"lr": 0.01, "seed": 2}) == {"seed": 1}


# ---------------------------------------------------------------- the figures

def test_the_loss_chart_draws_an_earlier_run_faded_under_the_current_one():
    fig = loss_figure([1, 2], [3.0, 2.9], [0, 2], [3.2, 3.0], [3.1, 2.9],
                      previous=("previous run (weight decay 2.0)", [0, 10], [3.2, 4.5], [3.1, 0.1]))
    names = [t.name for t in fig.data]
    assert names[:2] == ["previous run (weight decay 2.0)"] * 2  # drawn first: the current run's lie on top
    assert names[2:] == ["train loss (each batch)", "train loss (evaluated)", "validation loss"]
    assert [t.opacity for t in fig.data[:2]] == [FADED_OPACITY] * 2 and fig.data[0].line.dash == "dot"
    assert fig.data[0].line.color == fig.data[3].line.color  # the same curve keeps its colour
    assert_plotly_would_send_the_same(fig)
    assert len(loss_figure([1], [3.0], [0], None, [3.1], previous=("p", [0], None, [3.0])).data) == 3  # no val


def test_the_progress_chart_gives_an_earlier_runs_measures_their_panels():
    """The first run measured losses in nats, this one only scores so far: the nats panel is there for the first
    run's lines, its axis spans their values."""
    earlier = ("previous run (weight decay 2.0)", [0, 100], {"val_acc": [0.0, 0.9], "excluded_loss": [0.5, 6.0]})
    fig = progress_figure([0], {"val_acc": [0.0]}, max_step=100, previous=earlier)
    placed = {(t.name, t.yaxis) for t in fig.data}
    assert placed == {("previous run (weight decay 2.0)", "y"), ("previous run (weight decay 2.0)", "y2"),
                      ("test accuracy (pairs never trained on)", "y")}
    assert fig.layout.yaxis2.range[1] >= 6.0 and list(fig.layout.xaxis2.range) == [0, 100]
    assert all(t.opacity == FADED_OPACITY for t in fig.data[:2]) and fig.data[2].opacity is None
    assert_plotly_would_send_the_same(fig)


# ---------------------------------------------------------------- the page

@pytest.mark.slow  # builds the page
def test_every_way_to_start_or_control_a_run_writes_its_refusal_to_the_status_line():
    """Without a listener on failure Gradio leaves a bare red 'Error' badge in the status line and a toast that goes
    in seconds: after Start, Pause, Resume, Stop and a class run's start one rewrites the line (with the noted
    sentence) and sets the poll timer (a run that goes on, after a reload, is then followed)."""
    from explorer.ui import build_app

    config = build_app().get_config_file()
    deps, types = config["dependencies"], {c["id"]: c["type"] for c in config["components"]}
    status = next(d for d in deps if d["api_name"] == "train_start")["outputs"]
    for name in ("train_start", "train_pause", "train_resume", "train_stop", "start_class_run", "start_class_run_1"):
        action = next(d for d in deps if d["api_name"] == name)
        after = [d for d in deps if d["trigger_after"] == action["id"] and d["trigger_only_on_failure"]]
        assert len(after) == 1 and set(status) <= set(after[0]["outputs"]), name
        assert "timer" in {types[o] for o in after[0]["outputs"]}, name
