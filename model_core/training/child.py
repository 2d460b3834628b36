"""The training child's side of a run (model_core.training.remote starts it): build the Trainer from the job, train
on this process's main thread, obey the server's commands on another thread, and report through one outbox."""
import os
import threading
import time
import traceback

import torch

from model_core.data.tasks.examples import example_line, example_parts, is_examples
from model_core.data.tokenization import tokenizer_from_dict
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from model_core.model.sampling import generate
from model_core.training.process_setup import prepare_child, process_alive
from model_core.training.run_protocol import (
    Command,
    Confirmed,
    Done,
    Failed,
    SetThreads,
    Steps,
    ThreadsRunning,
    Weights,
)
from model_core.training.trainer import Trainer

FLUSH_SECONDS = 0.25  # step metrics travel in batches at most this old (the page polls once a second)
TASK_EXAMPLES_SAMPLED = 3  # a task model's sample: its answers to this many training and this many test examples
CHILD_NICE = 10  # training yields the CPU to interactive work (analysis in the server) when both want it


def child_main(job: dict, commands, messages) -> None:
    """Build the trainer from the job (a model's, or what job["build"] builds: run_protocol.ChildJob), train on
    this process's main thread, report everything."""
    prepare_child(CHILD_NICE, job["threads"])
    outbox = Outbox(messages)
    try:
        trainer = job.get("build", child_trainer)(job)
    except Exception as err:  # noqa: BLE001 - reported to the server, which shows it
        outbox.put(Failed(error_text(err)))
        return
    outbox.put(ThreadsRunning(torch.get_num_threads()))
    wanted_threads = [job["threads"]]  # set by obey(), applied on this (the training) thread before each step

    def apply_threads() -> None:  # and each evaluation batch: a run told to share before its first step obeys
        if wanted_threads[0] and wanted_threads[0] != torch.get_num_threads():
            torch.set_num_threads(wanted_threads[0])  # OpenMP's thread count is per calling thread
            outbox.put(ThreadsRunning(torch.get_num_threads()))

    trainer.before_work = apply_threads
    threading.Thread(target=obey, args=(trainer, commands, outbox, job["parent_pid"], wanted_threads),
                     daemon=True).start()
    try:
        state = trainer.run(callback=job.get("report", reporter)(trainer, job, outbox))
    except Exception as err:  # noqa: BLE001
        outbox.put(Failed(error_text(err)))
        return
    outbox.put(Weights(weights(trainer.model)))
    outbox.put(Done(state))
    messages.close()
    messages.join_thread()


def reporter(trainer: Trainer, job: dict, outbox: "Outbox"):
    """The callback of trainer.run: each step's metrics to the outbox, with a sample when due and the weights with
    some snapshots."""
    every, n_tokens = job["sample_every"], job["sample_tokens"]
    snapshots_seen = [0]

    def report(metrics: dict) -> None:
        step = metrics.get("step", 0)
        if every and (step % every == 0 or "eval" in metrics):  # each evaluation shows a fresh sample too
            metrics["sample"] = run_sample(trainer, n_tokens)
        if "snapshot" in metrics:
            if weights_due(trainer, snapshots_seen[0], job["weights_every"]):
                metrics["weights"] = weights(trainer.model)
            snapshots_seen[0] += 1
        outbox.metrics(metrics)

    return report


def run_sample(trainer: Trainer, n_tokens: int) -> str:
    """The sample box's text: a task model's answers to some of its task's examples, else n_tokens generated from
    the probe's first token."""
    if is_examples(trainer.train_data):
        rule = (trainer.cfg.task or {}).get("rule")
        head = f"Answers to the task's examples{f' ({rule})' if rule else ''}:\n"
        return head + task_answers_text(trainer.model, trainer.tokenizer, trainer.train_data, trainer.val_data)
    return sample_text(trainer.model, trainer.tokenizer, trainer.probe_ids[:1] or [0], n_tokens)


def task_answers_text(model, tokenizer, train, test, per_split: int = TASK_EXAMPLES_SAMPLED) -> str:
    """The model's greedy answers to a few training and test examples [N, 2, T], one a line as the Data tab shows
    an example ('test: 12 40 = → 52 ✓'), a wrong one followed by the right answer."""
    label = tokenizer.token_label if tokenizer is not None else str
    lines = []
    for split, data in (("train", train), ("test", test)):
        if data is None or not len(data):
            continue
        for x, y in data[torch.linspace(0, len(data) - 1, per_split).long().unique()].tolist():
            prompt, answer = example_parts(x, y)
            said = [s.token for s in generate(model, prompt, len(answer), temperature=0, seed=0,
                                              keep_distributions=False)]
            mark = "✓" if said == answer else f"✗ (the answer is {' '.join(label(t) for t in answer)})"
            lines.append(f"{split}: {example_line(label, prompt, said)} {mark}")
    return "\n".join(lines)


def sample_text(model, tokenizer, start: list[int], n_tokens: int) -> str:
    """A short seeded generation from `start`, as the model is right now."""
    ids = [s.token for s in generate(model, start, n_tokens, temperature=0.8, seed=0)]
    return tokenizer.decode(start + ids) if tokenizer is not None else str(start + ids)


def error_text(err: Exception) -> str:
    """What the user reads: our own errors (TrainingError, ConfigError, ...) speak for themselves; anything
    else is a bug, printed in full to the app's log and named only by its kind."""
    if type(err).__module__.startswith("model_core"):
        return str(err)
    traceback.print_exc()
    return f"an internal error ({type(err).__name__}) stopped the training process; the app's log has the details."


class Outbox:
    """Child -> server messages, in order. Step metrics wait in a batch until FLUSH_SECONDS have passed or a
    step brings an evaluation, snapshot or sample: a message per step cost the 2-core machine a few per cent
    of training speed. Any other message first sends the batch, so the server never sees a step late."""

    def __init__(self, messages):
        self.messages, self.pending, self.lock, self.sent_at = messages, [], threading.Lock(), time.monotonic()

    def metrics(self, metrics: dict) -> None:
        with self.lock:
            self.pending.append(metrics)
            news = any(k in metrics for k in ("eval", "snapshot", "sample"))
            if news or time.monotonic() - self.sent_at >= FLUSH_SECONDS:
                self.flush()

    def put(self, message) -> None:
        with self.lock:
            self.flush()
            self.messages.put(message)

    def flush(self) -> None:
        if self.pending:
            self.messages.put(Steps(self.pending))
            self.pending = []
        self.sent_at = time.monotonic()


def child_trainer(job: dict) -> Trainer:
    model = GPT(GPTConfig.from_dict(job["model_config"]))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in job["weights"].items()})
    tokenizer = None if job["tokenizer"] is None else tokenizer_from_dict(job["tokenizer"])
    val = None if job["val"] is None else torch.from_numpy(job["val"])
    return Trainer(model, torch.from_numpy(job["train"]), val, job["cfg"], tokenizer)


def weights(model) -> dict:
    """The weights as numpy copies. Copies, because the queue pickles in a background thread after training
    may have moved on; numpy, because torch would share tensors through file descriptors that die with the
    sender."""
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def weights_due(trainer: Trainer, index: int, every: int) -> bool:
    """Send the weights with snapshot number `index`? Every `every`-th, and the run's last (the end of the run,
    or a stop)."""
    return bool(every) and (index % every == 0 or trainer.step_count >= trainer.cfg.max_steps or trainer.stopping)


def obey(trainer: Trainer, commands, outbox: Outbox, parent_pid: int, wanted_threads: list) -> None:
    """Carry out the server's commands (model_core.training.run_protocol). A closed pipe or a vanished app means
    nobody will read this run again: leave at once, without flushing messages into a pipe nobody drains."""
    while True:
        try:
            command = commands.recv() if commands.poll(1.0) else None
        except (EOFError, OSError):
            os._exit(0)
        if command is None and not process_alive(parent_pid):
            os._exit(0)
        match command:
            case Command.PAUSE:
                pause(trainer, outbox)
            case Command.RESUME:
                trainer.resume()
                outbox.put(Confirmed("running"))
            case Command.STOP:
                trainer.stop()
            case SetThreads(n):
                wanted_threads[0] = n


def pause(trainer: Trainer, outbox: Outbox) -> None:
    """Pause the loop and, once it is parked, send its weights (the paused model) and confirm."""
    trainer.pause()
    while trainer.state in ("idle", "running"):  # until the loop parks (or the run ends)
        time.sleep(0.005)
    if trainer.state == "paused":
        outbox.put(Weights(weights(trainer.model)))
        outbox.put(Confirmed("paused"))
