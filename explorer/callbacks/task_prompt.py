"""The shared prompt for a task model: opening a model trained on an algorithmic task (its words '0'..'58' and '=',
or 't0'..'t63') puts one of its task's own prompts in the box when the box holds text the model cannot read
(Shakespeare), so that every tab can draw."""
import functools
import json

import gradio as gr

from explorer.callbacks.lessons import reads
from explorer.state.session import Session
from model_core.data.tasks.examples import example_parts, is_examples
from model_core.data.tasks.registry import TaskError, make_task

STREAM_PROMPT_TOKENS = 48  # a stream task's prompt: its first tokens, a segment and its repeats (8-24 tokens each)


def prompt_for_model(session: Session, prompt: str):
    """-> the inspected model's own prompt when it cannot read `prompt` (or it is empty): a task model's, or the one
    a notebook gave it (transformer_explorer.show); else no change (a lesson's or a student's prompt in the model's
    words stays)."""
    held = session.inspected.held
    spec = getattr(held.train_config, "task", None) if held is not None else None
    if prompt.strip() and reads(session, prompt) or held is None:
        return gr.update()
    if held.prompt:
        return held.prompt
    if not spec:
        return gr.update()
    try:
        return task_prompt(json.dumps(spec, sort_keys=True), session.inspected.config.block_size)
    except TaskError:  # damaged task settings: the tabs say what they cannot read
        return gr.update()


@functools.lru_cache(maxsize=8)
def task_prompt(spec_json: str, block_size: int) -> str:
    """'0 4 =': the prompt of the task's first training example (the Data tab's first line) in the model's words,
    or a stream task's first tokens (at most block_size)."""
    task = make_task(json.loads(spec_json))
    train, _ = task.splits()
    if is_examples(train):
        ids = example_parts(*train[0].tolist())[0]
    else:
        ids = train[: min(block_size, STREAM_PROMPT_TOKENS)].tolist()
    return " ".join(task.tokenizer().token_label(i) for i in ids)
