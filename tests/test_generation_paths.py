"""The choice of a frozen model's generation path: the fastest path whose greedy answers to the check prompts equal
float32's on at least 9 of 10, asked fastest first; float32 needs no check. Timings are stubbed here (a test never
times anything); the answers are real."""
import subprocess
import sys

import pytest

import model_core.model.generation_paths as paths
from model_core import GPT
from model_core.model.generation_paths import Cancelled, choose_generation_path, fastest_agreeing, greedy_answers
from model_core.model.quantized import Float32Linear
from model_core.model.sampling import generate
from tests.helpers import ROOT, frozen_grid_model, tiny_config

CHECKS = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15], [16, 17, 18], [20, 21, 22, 23, 24], [25, 26],
          [27, 28, 29], [30, 31, 32, 33], [34, 35, 36, 37]]  # three lengths: three batches


def test_the_fastest_path_that_agrees_wins_and_only_the_faster_ones_are_checked():
    asked = []

    def agrees(name):
        asked.append(name)
        return name != "int4"

    assert fastest_agreeing({"float32": 30.0, "bfloat16": 20.0, "int4": 10.0}, lambda name: True) == "int4"
    assert fastest_agreeing({"float32": 30.0, "bfloat16": 20.0, "int4": 10.0}, agrees) == "bfloat16"
    assert asked == ["int4", "bfloat16"]
    asked.clear()
    assert fastest_agreeing({"float32": 12.0, "bfloat16": 20.0, "int4": 10.0}, agrees) == "float32"
    assert asked == ["int4"]  # float32 came next: bfloat16, slower, was never checked
    assert fastest_agreeing({"float32": 12.0, "bfloat16": 11.0}, lambda name: False) == "float32"


class Broken(Float32Linear):
    """A layer format that gets the arithmetic wrong (its weights doubled): its answers part from float32's."""

    def __call__(self, x):
        return 2 * super().__call__(x)


def stub_timings(ms: dict, batch: dict = None):
    """step_milliseconds answering `ms` for one row and `batch` (or `ms`) for Compare's rows."""
    def timings(twins, prompt, rows=1, rounds=5, steps=4, cancelled=None):
        return {name: (ms if rows == 1 else batch or ms)[name] for name in twins}
    return timings


@pytest.mark.slow
def test_the_chooser_rejects_a_faster_path_whose_answers_differ_and_keeps_one_that_agrees(monkeypatch):
    model = frozen_grid_model()
    formats = dict(paths.FORMATS, broken=(Broken, Float32Linear, False), again=(Float32Linear, Float32Linear, True))
    monkeypatch.setattr(paths, "FORMATS", formats)
    monkeypatch.setattr(paths, "step_milliseconds", stub_timings(
        {"float32": 9.0, "bfloat16": 8.0, "int4": 7.0, "again": 6.0, "broken": 1.0}))
    twins, choice = choose_generation_path(model, CHECKS, check_tokens=12)
    assert choice.chosen == {1: "again", 4: "again"} and twins[1] is twins[4]  # "again": float32, gate and up fused
    equal, total = choice.agreement["broken"]
    assert total == len(CHECKS) and equal < 9  # rejected: it was asked first, being fastest
    assert choice.agreement["again"] == (len(CHECKS), len(CHECKS))
    assert set(choice.agreement) == {"broken", "again"}  # the slower paths were never checked
    assert "again" in choice.sentence() and "broken's greedy answers" in choice.sentence()


@pytest.mark.slow
def test_picking_paths_makes_every_copy_generate_with_them_one_row_and_compares_rows_each_their_own(monkeypatch):
    model = frozen_grid_model()
    monkeypatch.setattr(paths, "FORMATS", dict(paths.FORMATS, again=(Float32Linear, Float32Linear, True)))
    monkeypatch.setattr(paths, "step_milliseconds", stub_timings(
        {"float32": 9.0, "bfloat16": 8.0, "int4": 7.0, "again": 1.0},
        batch={"float32": 1.0, "bfloat16": 8.0, "int4": 7.0, "again": 9.0}))
    before = model.copy().for_generation()  # float32 until a path is picked
    choice = model.pick_generation_path(CHECKS[:3])
    assert choice.chosen == {1: "again", 4: "float32"} and model.shared["generation_choice"] is choice
    assert set(choice.agreement) == {"again"}  # float32 needs no check
    one, batch = model.copy().for_generation(1), model.copy().for_generation(4)
    assert one is model.shared["generation"][1] and batch is model.shared["generation"][4]
    assert one is not before and batch is not one and model.copy().for_generation(6) is batch
    assert "4 rows (Compare) with its float32 path" in choice.sentence()
    steps = [s.token for s in generate(model.copy(), [1, 2, 3], 6, temperature=0.0)]
    assert steps == greedy_answers(one, [[1, 2, 3]], 6)[0]


@pytest.mark.slow
def test_greedy_answers_of_a_batch_equal_each_prompt_alone_and_stop_after_the_stop_token():
    model = frozen_grid_model()
    twin = model.for_generation()
    together = greedy_answers(twin, CHECKS, 10)
    alone = [greedy_answers(twin, [ids], 10)[0] for ids in CHECKS]
    assert together == alone and all(len(a) == 10 for a in together)
    stop = together[0][3]
    cut = greedy_answers(twin, CHECKS[:1], 10, stop_token=stop)[0]
    assert cut == together[0][:together[0].index(stop) + 1]


def test_only_a_frozen_model_has_paths_to_pick():
    model = frozen_grid_model()
    model.shared = None
    with pytest.raises(ValueError, match="frozen"):
        model.pick_generation_path(CHECKS)


@pytest.mark.slow
def test_a_cancelled_choice_stops_between_two_steps_and_changes_nothing():
    model = frozen_grid_model()
    before = model.for_generation()
    asked = []
    with pytest.raises(Cancelled):
        model.pick_generation_path(CHECKS, cancelled=lambda: asked.append(1) or len(asked) > 3)
    assert model.for_generation() is before and "generation_choice" not in model.shared


@pytest.mark.slow  # a process of its own
def test_a_process_that_ends_while_the_generation_path_is_still_being_chosen_ends_cleanly():
    """Opening a pretrained model starts a thread that measures its generation paths (tens of seconds for
    SmolLM2); a process that exits first stops it between two steps (shipped.stop_picking, at exit). Without that
    the thread was still inside a torch operation when the interpreter tore down, and the process aborted
    ("terminate called without an active exception", exit code 134). The thread measures a stand-in here, a frozen
    model of SmolLM2's kind of 25 M parameters (loading SmolLM2 itself took most of this test's 39 CPU-seconds)."""
    script = ("import threading, time, types; from explorer.state.shipped import pick_generation_path_soon;"
              "from tests.helpers import LLAMA; from model_core.model.gpt import GPT; from model_core.model.config import GPTConfig;"
              "cfg = GPTConfig(vocab_size=96, block_size=64, d_model=512, n_heads=8, n_kv_heads=4, n_layers=8,"
              " d_mlp=1024, **LLAMA);"
              "model = GPT(cfg).eval().freeze();"
              "tokenizer = types.SimpleNamespace(encode=lambda text: [ord(c) % 96 for c in text]);"
              "pick_generation_path_soon('stand-in', types.SimpleNamespace(model=model, tokenizer=tokenizer));"
              "time.sleep(1);"  # inside the measurement's torch calls
              "assert any(t.name == 'generation-path' for t in threading.enumerate()), 'measured already'")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "terminate called" not in done.stderr and "generates one row" not in done.stdout  # stopped, not finished


@pytest.mark.parametrize("setting, measured", [(None, True), ("measure", True), ("float32", False)])
def test_opening_a_pretrained_model_measures_its_paths_unless_told_float32(monkeypatch, setting, measured):
    import model_core.checkpoints.gguf as gguf
    from explorer.state import shipped
    from model_core.checkpoints.checkpoint import Checkpoint

    stand_in = Checkpoint(GPT(tiny_config()), None)
    monkeypatch.setattr(gguf, "load_gguf", lambda path, block_size: stand_in)
    started = []
    monkeypatch.setattr(shipped, "pick_generation_path_soon", lambda name, ckpt: started.append((name, ckpt)))
    if setting is None:
        monkeypatch.delenv(shipped.GENERATION_PATH_ENV, raising=False)
    else:
        monkeypatch.setenv(shipped.GENERATION_PATH_ENV, setting)
    assert shipped.load_pretrained("smollm2-135m") is stand_in and stand_in.model.frozen
    assert started == ([("smollm2-135m", stand_in)] if measured else [])
