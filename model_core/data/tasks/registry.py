"""Every task by name, and the task a spec describes."""
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


def make_task(spec: dict):
    """The task a spec describes; TaskError (a ValueError) saying what is wrong with it."""
    if not isinstance(spec, dict) or len(spec) > MAX_SPEC_KEYS:
        raise TaskError(f"a task spec is a dict of at most {MAX_SPEC_KEYS} settings, got {type(spec).__name__}.")
    name = spec.get("name")
    if name not in TASKS:
        raise TaskError(f"unknown task {str(name)[:40]!r}; the tasks are {', '.join(TASKS)}.")
    return TASKS[name].from_spec(spec)


__all__ = ["TASKS", "TaskError", "make_task"]
