"""The shared prompt follows a task model: the box kept Shakespeare when the open model's words were '0'..'58' and
'=' (or 't0'..'t63'), and no tab could draw; opening a task model puts one of its task's prompts there."""
import pytest
import torch

from explorer.callbacks.common import analyse
from explorer.callbacks.task_data import examples_text, prepared_task
from explorer.callbacks.task_prompt import STREAM_PROMPT_TOKENS, prompt_for_model
from explorer.common.controls import DEFAULT_PROMPT
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.data.tasks.choices import CHOICES
from model_core.data.tasks.registry import make_task
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from model_core.training.train_config import TrainConfig
from tests.helpers import tiny_session


def task_session(spec: dict, block_size: int) -> Session:
    """A session inspecting an untrained model of the task `spec`, its task recorded as a run's is."""
    task = make_task(spec)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=task.tokenizer().vocab_size, block_size=block_size, d_model=16, n_heads=2,
                          n_layers=1))
    return Session(Inspected(Checkpoint(model.eval(), task.tokenizer(), TrainConfig(task=task.spec())), "mine"))


def test_opening_a_modular_addition_model_puts_one_of_its_examples_in_the_prompt():
    session = task_session(CHOICES["task: modular addition"], block_size=3)  # the grokking preset's task
    prompt = prompt_for_model(session, DEFAULT_PROMPT)
    tokenizer, train, _, _ = prepared_task("task: modular addition")
    assert prompt == examples_text(tokenizer, train).splitlines()[0].split(" → ")[0] == "0 4 ="  # the Data tab's
    assert analyse(session, prompt).labels == ["0", "4", "="]  # every tab reads it
    assert prompt_for_model(session, "12 40 =") == {"__type__": "update"}  # a prompt in its words stays
    assert prompt_for_model(session, " ") == prompt  # an empty one does not


def test_a_repeated_tokens_model_gets_a_stretch_of_its_stream_and_a_text_model_keeps_its_prompt():
    spec = {**CHOICES["task: repeated random tokens"], "n_tokens": 4000}
    session = task_session(spec, block_size=64)
    prompt = prompt_for_model(session, DEFAULT_PROMPT)
    words = prompt.split()
    assert len(words) == STREAM_PROMPT_TOKENS and all(w.startswith("t") for w in words)
    assert len(set(words)) < len(words)  # a segment and its repeat: what an induction head reads
    assert len(analyse(session, prompt).labels) == STREAM_PROMPT_TOKENS
    short = task_session({"name": "sort", "length": 6, "symbols": 10, "n_train": 40, "n_test": 10}, block_size=12)
    assert prompt_for_model(short, DEFAULT_PROMPT).endswith(" |")  # six symbols, then the separator
    assert prompt_for_model(tiny_session(), "12 40 =") == {"__type__": "update"}  # not a task model: no change


@pytest.mark.slow
def test_the_page_runs_it_whenever_the_inspected_model_changes():
    from explorer.ui import MODEL_INFO_ID, build_app

    demo = build_app()
    wired = [fn for fn in demo.fns.values() if fn.name == "follow_model"]
    assert len(wired) == 1 and [demo.blocks[i].elem_id for i, _ in wired[0].targets] == [MODEL_INFO_ID]
    assert [t for _, t in wired[0].targets] == ["change"]
    prompts = [c for c in wired[0].inputs if c.label == "Prompt"]  # it reads the prompt and may write it
    assert len(prompts) == 1 and prompts[0] in wired[0].outputs
