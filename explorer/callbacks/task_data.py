"""An algorithmic task as the Train tab's data (model_core.data.tasks): modular addition, repeated random tokens,
copy, reverse, sort. The Data tab lists them after the texts ("task: ..."); example tasks show examples, not
windows, and train on their answers only."""
import functools

import torch

from explorer.figures.data import token_index_figure
from explorer.state.session import Session
from explorer.state.workspace import DataChoice
from explorer.teaching import captions
from model_core.data.dataset import compact
from model_core.data.tasks.choices import CHOICES, FULL_BATCH_TASKS
from model_core.data.tasks.examples import example_line, example_parts
from model_core.data.tasks.registry import make_task

EXAMPLES_SHOWN = 12
TOKENS_SHOWN = 50  # the Data tab's token-index chart: whole examples up to this many tokens


def is_task(corpus) -> bool:
    return isinstance(corpus, str) and corpus in CHOICES


@functools.lru_cache(maxsize=len(CHOICES))
def prepared_task(corpus: str):
    """(tokenizer, train, validation or test, spec) of a task: made once per server, never modified."""
    task = make_task(CHOICES[corpus])
    train, val = task.splits()
    if train.dim() == 1:
        train, val = compact(train, task.tokenizer().vocab_size), compact(val, task.tokenizer().vocab_size)
    return task.tokenizer(), train, val, task.spec()


def choose_task(session: Session, corpus: str) -> DataChoice:
    tokenizer, train, val, spec = prepared_task(corpus)
    choice = DataChoice(corpus, examples_text(tokenizer, train), 0, tokenizer, train, val, task=spec)
    session.workspace.data = choice
    return choice


def examples_text(tokenizer, train) -> str:
    """The first examples as the model reads them (the answer after '→'), or the stream's start."""
    label = tokenizer.token_label
    if train.dim() == 1:
        return " ".join(label(int(i)) for i in train[:120])
    return "\n".join(example_line(label, *example_parts(x, y)) for x, y in train[:EXAMPLES_SHOWN].tolist())


def first_examples(train) -> tuple[list[int], list[int]]:
    """(token ids, example number of each) of the first whole examples, prompt then answer, up to TOKENS_SHOWN
    tokens (at least one example)."""
    ids, examples = [], []
    for k, (x, y) in enumerate(train[:TOKENS_SHOWN].tolist()):
        prompt, answer = example_parts(x, y)
        if ids and len(ids) + len(prompt) + len(answer) > TOKENS_SHOWN:
            break
        ids += prompt + answer
        examples += [k] * (len(prompt) + len(answer))
    return ids, examples


def task_data_view(d: DataChoice):
    """The Data tab's outputs for a task: summary, vocabulary rows, examples, token-index figure, split, batch."""
    tok, spec = d.tokenizer, d.task
    counts = token_counts(d, tok.vocab_size)
    vocab_rows = [[i, tok.token_label(i), counts[i]] for i in range(tok.vocab_size)]
    if d.train.dim() == 1:
        first, examples = d.train[:TOKENS_SHOWN].tolist(), None
        unit, split = "tokens", (f"Training stream: **{len(d.train):,}** tokens; validation: **{len(d.val):,}** "
                                 "tokens (the last 10 %).")
    else:
        first, examples = first_examples(d.train)
        unit, split = "examples", (f"Training examples: **{len(d.train):,}**; test examples: **{len(d.val):,}**, "
                                   "none of them trained on: the test accuracy says whether the model generalised "
                                   "or only memorised.")
    summary = (f"**{d.name}** ({spec.get('rule', '')}): **{len(d.train) + len(d.val):,} {unit}**, a vocabulary of "
               f"**{tok.vocab_size}** tokens. Only the answer is scored." if unit == "examples" else
               f"**{d.name}** ({spec.get('rule', '')}): a vocabulary of **{tok.vocab_size}** tokens.")
    labels = [tok.token_label(i) for i in first]
    split += "\n\n**Token indices:** " + captions.token_index_caption(first, labels)
    return summary, vocab_rows, d.sample, token_index_figure(first, labels, examples), split, task_batch_rows(d)


def token_counts(d: DataChoice, vocab_size: int) -> list[int]:
    """How often each token id occurs in the task's data (training and test): in the stream, or in the whole
    examples (an example is its input row and the last target)."""
    if d.train.dim() == 1:
        ids = torch.cat([d.train, d.val]).long()
    else:
        rows = torch.cat([d.train, d.val])  # [N, 2, T] (input, target) rows
        ids = torch.cat([rows[:, 0].reshape(-1), rows[:, 1, -1]])
    return torch.bincount(ids[ids >= 0], minlength=vocab_size).tolist()


def task_batch_rows(d: DataChoice) -> list[list]:
    """Rows (example, position, input so far, target or '(not scored)') of the first examples or windows."""
    label = d.tokenizer.token_label
    if d.train.dim() == 1:
        x = d.train[:9].tolist()
        return [[0, t, " ".join(label(i) for i in x[: t + 1]), label(x[t + 1])] for t in range(8)]
    rows = []
    for b, (x, y) in enumerate(d.train[:4].tolist()):
        for t in range(len(x)):
            rows.append([b, t, " ".join(label(i) for i in x[: t + 1]), label(y[t]) if y[t] >= 0 else "(not scored)"])
    return rows


def task_training(d: DataChoice, batch_size: int, eval_iters: int) -> dict:
    """TrainConfig settings a task adds: its spec; a full batch for the tasks trained that way (one evaluation
    pass then covers every example)."""
    if d.task is None:
        return {}
    if d.task.get("name") in FULL_BATCH_TASKS:
        return {"task": d.task, "batch_size": len(d.train), "eval_iters": 1}
    return {"task": d.task, "batch_size": batch_size, "eval_iters": eval_iters}
