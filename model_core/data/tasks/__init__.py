"""Algorithmic tasks: data a small model learns exactly, made from a few settings (a task spec).

A task spec is a plain dict, {"name": ..., settings..., "prompt": ..., "answer": ...}; it travels in
TrainConfig.task and so is saved in a checkpoint's config.json under train_config.task, where a script finds
the prompt format (model_core.data.tasks.modular: "{a} {b} =" answered by "{c}", read with the checkpoint's own
word tokenizer). Two kinds of data come out of a task:
  * examples (modular addition, copy, reverse, sort): a tensor [N, 2, T], each example's input row and target
    row, the target -1 where nothing is predicted (only the answer is scored); the train and test examples are
    disjoint (the test pairs are never trained on);
  * a token stream (repeated random tokens, for induction heads): a 1-D tensor cut into windows like a text."""
from model_core.data.tasks.examples import TaskError
from model_core.data.tasks.modular import ModularAddition
from model_core.data.tasks.repeats import RepeatedTokens
from model_core.data.tasks.sequences import SequenceTask

TASKS = {
    "modular-addition": ModularAddition,
    "copy": SequenceTask,
    "reverse": SequenceTask,
    "sort": SequenceTask,
    "repeated-tokens": RepeatedTokens,
}
MAX_SPEC_KEYS = 16
# The lighter grokking run (the grokking preset): p = 59 and 40 % of the pairs groks on 2 cores in minutes;
# Nanda et al.'s p = 113 and 30 % is ModularAddition() (docs/circuits.md: the reference run)
GROKKING_TASK = dict(name="modular-addition", p=59, train_fraction=0.4, seed=0)
# the Data tab's names for the tasks, with their settings (the presets' own)
CHOICES = {
    "task: modular addition": GROKKING_TASK,
    "task: repeated random tokens": {"name": "repeated-tokens"},
    "task: copy": {"name": "copy"},
    "task: reverse": {"name": "reverse"},
    "task: sort": {"name": "sort"},
}


def make_task(spec: dict):
    """The task a spec describes; TaskError (a ValueError) saying what is wrong with it."""
    if not isinstance(spec, dict) or len(spec) > MAX_SPEC_KEYS:
        raise TaskError(f"a task spec is a dict of at most {MAX_SPEC_KEYS} settings, got {type(spec).__name__}.")
    name = spec.get("name")
    if name not in TASKS:
        raise TaskError(f"unknown task {str(name)[:40]!r}; the tasks are {', '.join(TASKS)}.")
    return TASKS[name].from_spec(spec)


__all__ = ["CHOICES", "GROKKING_TASK", "TASKS", "TaskError", "make_task", "ModularAddition", "RepeatedTokens", "SequenceTask"]
