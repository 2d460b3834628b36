"""The measurements behind python -m bench.app: the app's server-side costs.

(a) Attention tab on a full-block prompt (the shipped model's 64 tokens): the whole callback and its parts,
    including the figures' JSON, which Gradio serialises on every answer. Target: <= 300 ms median.
(b) Training in the app (TrainingRun: a child process mirrored by a thread, plus a poller calling
    callbacks.train.poll every second) vs the CLI path (Trainer.run in this process, nobody polling), classroom
    preset, same steps, interleaved; wall time from start to the last step, so the app's process start-up
    counts against it. Target: ratio >= 0.9."""
import argparse
import functools
import os
import statistics
import threading
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import torch  # noqa: E402

from bench.results import Row, at_least, at_most, info  # noqa: E402
from bench.timing import print_table  # noqa: E402
from explorer.callbacks import train as train_callbacks  # noqa: E402
from explorer.callbacks.attention import attention_view  # noqa: E402
from explorer.figures.attention import (
    attention_grid_figure,
    attention_head_figure,
    attention_steps_figure,
    query_attention_bars_figure,
)
from explorer.figures.heads import head_statistics_table  # noqa: E402
from explorer.state.inspected import Inspected
from explorer.state.session import Session  # noqa: E402
from explorer.state.shipped import load_shipped  # noqa: E402
from explorer.state.training_run import TrainingRun  # noqa: E402
from model_core import GPT  # noqa: E402
from model_core.analysis import head_statistics  # noqa: E402
from model_core.data.corpora import load_corpus  # noqa: E402
from model_core.data.dataset import token_tensor, train_val_split  # noqa: E402
from model_core.training.presets import get_preset  # noqa: E402
from model_core.training.run_protocol import TrainJob  # noqa: E402
from model_core.training.trainer import Trainer  # noqa: E402

ATTENTION_TARGET_MS, TRAIN_TARGET_RATIO = 300, 0.9
RUNS = 10
# The Train tab's default run (the classroom preset's max_steps), per contender per round; rounds alternate
# CLI, app, CLI, app.
TRAIN_STEPS, TRAIN_ROUNDS = get_preset("classroom").train["max_steps"], 2


def median_ms(fn, runs: int = RUNS) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return 1000 * statistics.median(samples)


def full_block_prompt(session: Session) -> str:
    """A prompt exactly block_size tokens long, from the model's own training text where possible."""
    tok, block = session.inspected.tokenizer, session.inspected.model.cfg.block_size
    text = tok.strip_unknown(load_corpus("shakespeare")[:20_000])
    ids = tok.encode(text)[:block]
    assert len(ids) == block, f"could not build a {block}-token prompt"
    return tok.decode(ids)


def attention_rows(session: Session) -> list[list]:
    prompt = full_block_prompt(session)
    layer, head = 0, 0
    ids = session.inspected.tokenizer.encode(prompt)
    labels = [session.inspected.tokenizer.token_label(i) for i in ids]
    a = session.inspected.analysis(prompt, ids, labels)  # the cached activations the parts below start from
    patterns = a.cache.stack("pattern")[:, 0].numpy()
    stats = head_statistics(patterns)
    pattern = patterns[layer, head]
    steps_args = (a.cache["attn_scores_unmasked", layer][0, head].numpy(), a.cache["attn_scores", layer][0, head].numpy(),
                  pattern, a.cache["z", layer][0, :, head].numpy(), labels, layer, head)
    figures = {
        "grid figure": lambda: attention_grid_figure(patterns, labels, selected=(layer, head)),
        "head figure": lambda: attention_head_figure(pattern, labels, layer, head),
        "steps figure": lambda: attention_steps_figure(*steps_args),
        "bars figure": lambda: query_attention_bars_figure(pattern, labels, len(labels) - 1),
    }

    def forward_with_cache():
        session.inspected.model.run_with_cache(torch.tensor([a.ids]))

    def whole_view():
        session.inspected.caches.analysis.clear()  # a new prompt: the forward pass is part of the cost
        out = attention_view(session, prompt, layer, head, -1)
        for fig in out[:4]:
            fig.to_json()

    rows = [["attention_view + to_json (new prompt)", median_ms(whole_view)],
            ["attention_view (cached prompt)", median_ms(lambda: attention_view(session, prompt, layer, head, -1))],
            ["  model forward with cache", median_ms(forward_with_cache)],
            ["  head_statistics", median_ms(lambda: head_statistics(patterns))],
            ["  head_statistics_table", median_ms(lambda: head_statistics_table(stats))]]
    for name, build in figures.items():
        fig = build()
        rows.append([f"  {name}", median_ms(build)])
        rows.append([f"  {name}.to_json ({len(fig.to_json()) / 1e3:.0f} kB)", median_ms(fig.to_json)])
    return [at_most(f"Attention tab, {len(ids)}-token prompt: {rows[0][0]}", rows[0][1], "ms", ATTENTION_TARGET_MS),
            *(info(f"Attention tab: {name.strip()}", ms, "ms") for name, ms in rows[1:])]


# ---------------------------------------------------------------- training throughput

@functools.lru_cache(maxsize=1)
def shakespeare_data():
    """(tokenizer, train ids, val ids) of the default model, tokenised once for all runs."""
    tok = load_shipped("shakespeare").tokenizer
    return (tok, *train_val_split(token_tensor(tok.encode(tok.strip_unknown(load_corpus("shakespeare"))))))


def classroom_job(steps: int) -> TrainJob:
    preset = get_preset("classroom")
    tok, train, val = shakespeare_data()
    torch.manual_seed(0)
    model = GPT(preset.model_config(tok.vocab_size))
    return TrainJob(model, train, val, preset.train_config(max_steps=steps, device="cpu"), tok)


def tokens_per_second(job: TrainJob, steps: int, seconds: float) -> float:
    return steps * job.cfg.batch_size * job.model.cfg.block_size / seconds


def cli_run(steps: int) -> float:
    job = classroom_job(steps)
    trainer = Trainer(*job)
    start = time.perf_counter()
    trainer.run()
    return tokens_per_second(job, trainer.step_count, time.perf_counter() - start)


def app_run(steps: int) -> float:
    """TrainingRun (training in a child process), with the page's once-a-second poll running alongside, as in the app."""
    job = classroom_job(steps)
    session = Session(Inspected(load_shipped("shakespeare"), "bench"))
    session.workspace.run = TrainingRun(job, "shakespeare", sample_every=max(50, job.cfg.eval_interval),
                              adopt=session.inspected.adopt_training_model)
    done = threading.Event()

    def poller():
        while not done.is_set():
            train_callbacks.poll(session)
            done.wait(1.0)

    start = time.perf_counter()
    session.workspace.run.start()
    thread = threading.Thread(target=poller, daemon=True)
    thread.start()
    session.workspace.run.thread.join()
    seconds = time.perf_counter() - start
    done.set()
    thread.join()
    assert session.workspace.run.progress.error is None, session.workspace.run.progress.error
    return tokens_per_second(job, session.workspace.run.progress.step, seconds)


def training_rows() -> list[Row]:
    results = {"CLI (Trainer.run)": [], "app (TrainingRun + poll)": []}
    for _ in range(TRAIN_ROUNDS):
        results["CLI (Trainer.run)"].append(cli_run(TRAIN_STEPS))
        results["app (TrainingRun + poll)"].append(app_run(TRAIN_STEPS))
    cli, app = (statistics.median(v) for v in results.values())
    for name, v in results.items():
        print(f"training tokens/s, {name}, each round: {' '.join(f'{x:,.0f}' for x in v)}")
    return [*(info(f"training tokens/s, {name}, median of {len(v)}", statistics.median(v), "tokens/s")
              for name, v in results.items()),
            at_least(f"training tokens/s, app / CLI, classroom preset, {TRAIN_STEPS} steps", app / cli, "x",
                     TRAIN_TARGET_RATIO)]


def shown(rows: list[Row], digits: int) -> list[list]:
    """Rows as the printed table shows them: name, value, verdict."""
    return [[r.name, f"{r.value:,.{digits}f}", "" if r.met is None else "ok" if r.met else "MISSED"] for r in rows]


def measure(argv=None) -> list[Row]:
    argparse.ArgumentParser(prog="python -m bench.app", description=__doc__.splitlines()[0]).parse_args(argv)
    torch.manual_seed(0)
    session = Session(Inspected(load_shipped("shakespeare"), "shakespeare"))
    cfg = session.inspected.model.cfg
    print(f"model: {session.inspected.name} ({cfg.n_layers}L x {cfg.n_heads}H, d_model {cfg.d_model}, "
          f"block {cfg.block_size}); torch threads {torch.get_num_threads()}")
    attention = attention_rows(session)
    print_table(f"(a) Attention tab, {cfg.block_size}-token prompt, median of {RUNS} (target <= {ATTENTION_TARGET_MS} ms)",
                ["part", "ms", "verdict"], shown(attention, 1))
    training = training_rows()
    print_table(f"(b) Training tokens/s, classroom preset, {TRAIN_STEPS} steps, {TRAIN_ROUNDS} interleaved rounds "
                f"(target ratio >= {TRAIN_TARGET_RATIO})", ["measure", "value", "verdict"], shown(training, 3))
    return attention + training
