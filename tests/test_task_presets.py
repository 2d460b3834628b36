"""The task presets (induction-phase, grokking) are one run wherever they start: the Train tab's controls filled by
the preset and `python -m model_core.train --preset NAME` build the same model, data and settings, and train to
the same weights. A few steps only: the phase change and the grokking themselves (hundreds to thousands of steps)
are bench/induction_phase.py's and bench/grokking.py's."""
import pytest
import torch

from explorer.callbacks import presets, train
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from explorer.state.training_run import threads_per_run
from model_core.checkpoints.checkpoint import Checkpoint, load_checkpoint
from model_core.data.tasks.choices import CHOICES
from model_core.data.tokenization import build_tokenizer
from model_core.train import main as cli_main
from model_core.train import task_preset_trainer
from model_core.training.presets import get_preset
from model_core.training.trainer import Trainer
from tests.helpers import tiny_model, wait_for

PRESETS = ("induction-phase", "grokking")
STEPS = 4


def train_tab_run(preset: str, steps: int) -> Session:
    """A session after a Train-tab run of the preset of `steps` steps (its model adopted)."""
    session = Session(Inspected(Checkpoint(tiny_model(vocab_size=3), build_tokenizer("char", "abc")), "start"))
    values = presets.preset_control_values(preset) | {"max_steps": steps}
    train.start_training(session, values["corpus"], values["kind"], 512,
                         *[values[k] for k in (*train.ARCH_FIELDS, *train.OPTIM_FIELDS, "val_split")])
    try:
        # the run's child process starts torch: minutes on a loaded machine
        wait_for(lambda: not session.workspace.run.active, "the run finishing", timeout=600, interval=0.05)
        train.poll(session)  # adopts the finished model
    finally:
        session.workspace.stop_training()
    return session


@pytest.mark.parametrize("preset", PRESETS)
def test_the_preset_picks_its_own_task(preset):
    values = presets.preset_control_values(preset)
    assert CHOICES[values["corpus"]] == get_preset(preset).data["task"]


@pytest.fixture
def tab_threads():
    """Torch on as many threads as the Train tab gives a lone run: float sums, and so a run's last bits, depend on
    the thread count, and the grokking run (its embeddings decayed) amplifies 1 thread against 2 to 1e-4 in 4 steps."""
    threads = torch.get_num_threads()
    torch.set_num_threads(threads_per_run(1))
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.timeout(900)  # two processes start torch; on a machine loaded 10x that alone took minutes
def test_the_train_tab_and_the_command_line_train_the_same_run(preset, tmp_path, capsys, tab_threads):
    assert cli_main(["--preset", preset, "--max-steps", str(STEPS), "--device", "cpu", "--out", str(tmp_path)]) == 0
    cli = load_checkpoint(tmp_path)
    session = train_tab_run(preset, STEPS)
    tab = session.workspace.run.progress
    assert tab.step == STEPS == cli.evals[-1]["step"]
    assert tab.model.cfg == cli.model.cfg
    assert tab.cfg.to_dict() == cli.train_config.to_dict()  # schedule, optimiser, seed, task, evaluations
    for (name, mine), theirs in zip(session.inspected.model.state_dict().items(), cli.model.state_dict().values()):
        torch.testing.assert_close(mine, theirs, msg=name)  # same initialisation, batches and updates


class Built(Exception):
    """Raised in place of training: the trainer as built."""


@pytest.mark.parametrize("preset", PRESETS)
def test_the_benchmarks_trainer_is_the_command_lines_run(preset, tmp_path, monkeypatch):
    """bench.grokking, bench.induction_phase and the grokking asset train the preset through task_preset_trainer:
    the command line's trainer, caught as its run starts, has the same settings, weights and data."""
    def caught(trainer, **_):
        raise Built(trainer)
    monkeypatch.setattr(Trainer, "run", caught)
    with pytest.raises(Built) as built:
        cli_main(["--preset", preset, "--device", "cpu", "--out", str(tmp_path)])
    cli, mine = built.value.args[0], task_preset_trainer(preset)
    assert mine.cfg.to_dict() == cli.cfg.to_dict() and mine.model.cfg == cli.model.cfg
    for (name, ours), theirs in zip(mine.model.state_dict().items(), cli.model.state_dict().values()):
        assert torch.equal(ours, theirs), name  # initialised from the same seed
    assert torch.equal(mine.train_data, cli.train_data) and torch.equal(mine.val_data, cli.val_data)


def test_the_batch_size_note_shows_only_for_a_task_trained_full_batch():
    """The note 'trains on all its examples at every step' showed on every preset; the slider starts without it and
    a preset's data choice (the Data tab's corpus) brings it only where the slider does not apply."""
    import gradio as gr

    from explorer.tabs import train as train_tab
    from model_core.training.presets import PRESETS as ALL_PRESETS

    with gr.Blocks():
        batch = train_tab._optimiser_controls()[train_tab.OPTIM_FIELDS.index("batch_size")]
    assert batch.label == "Batch size" and not batch.info
    for name in ALL_PRESETS:
        corpus = presets.preset_control_values(name).get("corpus", train.DEFAULT_CORPUS)
        info = train_tab.batch_size_info(corpus)["info"]
        assert bool(info) == (name == "grokking"), (name, corpus, info)
    assert train_tab.batch_size_info("task: modular addition")["info"] == train_tab.FULL_BATCH_INFO
    assert train_tab.batch_size_info("task: sort")["info"] == ""


@pytest.mark.slow
def test_the_batch_size_note_follows_the_data_tabs_choice_on_the_page():
    """A preset sets the corpus; a link, a lesson or the student may too: the note follows the corpus."""
    from explorer.ui import build_app

    demo = build_app()
    wired = [fn for fn in demo.fns.values() if fn.name == "batch_size_info"]
    assert len(wired) == 1 and [t for _, t in wired[0].targets] == ["change"]
    assert demo.blocks[wired[0].targets[0][0]] is wired[0].inputs[0]
    assert [c.label for c in wired[0].outputs] == ["Batch size"]
    assert wired[0].inputs[0].label == "Built-in corpus or task"  # the Data tab's
