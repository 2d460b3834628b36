"""python -m bench.first_evaluation: how soon a class sees its run learn. A run of the classroom preset is started
the way the Train tab starts it (start_training on a Session: TrainingRun, RemoteTrainer, the forkserver child),
and the time from Start to each event reaching the server is printed: the child's first message, each evaluation
(steps 0, 10, 25, 50: explorer/model_core's early schedule), the first step, each sample and snapshot.

--cold starts with no forkserver running (the app's first Start before its warm-up had started one), else the
forkserver is started and waited for first (as the app's warm-up does). Prints `uptime`'s load: on a shared
machine the numbers scale with it (the child runs at nice 10, behind every busy process).

--cpu does the child's work up to the step-`until` evaluation in this process instead, on one torch thread, and
prints the CPU seconds of each part (build the trainer from the job, evaluate, snapshot, sample, train): what the
run costs whatever else the machine does, an upper bound for its wall time on an idle machine.

Target (issue #29): the first evaluation after step 0 (the first that shows learning) reaches the server
within 10 s of Start on 2 cores."""
import argparse
import os
import time

from bench.results import Row, at_most, info, run_main

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
TARGET_SECONDS = 10.0  # Start to the first evaluation after step 0


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Seconds from Start to a classroom run's first evaluations.")
    p.add_argument("--preset", default="classroom", help="the Train tab preset")
    p.add_argument("--until", type=int, default=50, help="stop once the evaluation at this step has arrived")
    p.add_argument("--cold", action="store_true", help="no forkserver running before Start")
    p.add_argument("--timeout", type=float, default=300.0, help="give up after this many seconds")
    p.add_argument("--cpu", action="store_true", help="CPU seconds of each part of the child's work, in this process")
    return p.parse_args(argv)


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def start_values(preset: str) -> list:
    from explorer.callbacks.presets import preset_control_values
    from explorer.common.controls import ARCH_FIELDS, OPTIM_FIELDS

    values = preset_control_values(preset)
    return ["shakespeare", "char", 512, *(values[k] for k in (*ARCH_FIELDS, *OPTIM_FIELDS))]


def warm_forkserver() -> float:
    """Start the forkserver and wait until it has imported its preloads (a throwaway child gets through): seconds."""
    from model_core.training.remote import CONTEXT, start_forkserver

    began = time.perf_counter()
    start_forkserver()
    child = CONTEXT.Process(target=int)
    child.start()
    child.join()
    return time.perf_counter() - began


def timeline(session, began: float, until: int, timeout: float) -> list[tuple[float, str, tuple]]:
    """(seconds since Start, what arrived, its key such as ("eval", 10)) until the evaluation at step `until`,
    polling the run's record."""
    run, seen, events = session.workspace.run, set(), []

    def note(key, text):
        if key not in seen:
            seen.add(key)
            events.append((time.perf_counter() - began, text, key if isinstance(key, tuple) else (key,)))

    while time.perf_counter() - began < timeout and run.active:
        t = run.progress
        if t.threads_running:
            note("child", f"child running on {t.threads_running} torch threads")
        for e in list(t.evals):
            note(("eval", e["step"]), f"evaluation at step {e['step']}: val loss {e['val_loss']:.3f}")
        if t.history:
            note("step", "first step")
        for s in list(t.snapshots):
            note(("snapshot", s.step), f"snapshot at step {s.step}")
        for step, _ in list(t.samples):
            note(("sample", step), f"sample at step {step}")
        if ("eval", until) in seen:
            break
        time.sleep(0.01)
    return events


def cpu_parts(preset: str, until: int) -> list[tuple[str, float]]:
    """(part, CPU seconds on one thread) of what a run's child does up to the evaluation at step `until`."""
    import torch

    from explorer.callbacks.train import start_training
    from explorer.state.session import new_session
    from model_core import GPT
    from model_core.data.dataset import val_or_none
    from model_core.training.child import child_trainer, sample_text
    from model_core.training.remote import RemoteTrainer
    from model_core.training.run_protocol import TrainJob
    from model_core.training.trainer import evaluation_due

    session = new_session()
    start_training(session, *start_values(preset))  # the app's own data and config; its child is stopped at once
    session.workspace.stop_training()
    d, p = session.workspace.data, session.workspace.run.progress
    torch.manual_seed(p.cfg.seed)
    job = RemoteTrainer(TrainJob(GPT(p.model.cfg), d.train, val_or_none(d.val), p.cfg, d.tokenizer)).job
    parts = []

    def timed(name, work):
        began = time.process_time()
        result = work()
        parts.append((name, time.process_time() - began))
        return result

    torch.set_num_threads(1)
    trainer = timed("build the trainer from the job", lambda: child_trainer(job))
    for step in range(until + 1):
        if step:
            timed("training steps", trainer.step)
        if evaluation_due(step, trainer.cfg.eval_interval):
            timed(f"evaluation at step {step}", trainer.evaluate)
            timed(f"snapshot at step {step}", trainer.snapshot)
            timed(f"sample at step {step}", lambda: sample_text(trainer.model, trainer.tokenizer,
                                                                trainer.probe_ids[:1], job["sample_tokens"]))
    merged: dict[str, float] = {}
    for name, seconds in parts:
        merged[name] = merged.get(name, 0.0) + seconds
    return list(merged.items())


def timeline_rows(events: list[tuple[float, str, tuple]], started: float) -> list[Row]:
    """Every event as a row; the first evaluation after step 0 judged against TARGET_SECONDS (a miss if it
    never came)."""
    rows = [info("Start returned (model built, data ready, slot taken)", started, "s")]
    rows += [info(f"Start to: {text}", seconds, "s") for seconds, text, _ in events]
    learned = [seconds for seconds, _, key in events if key[0] == "eval" and key[1] > 0]
    return rows + [at_most("Start to the first evaluation after step 0", min(learned, default=float("nan")), "s",
                           TARGET_SECONDS)]


def measure(argv=None) -> list[Row]:
    args = parse_args(argv)
    import torch

    if args.cpu:
        parts = cpu_parts(args.preset, args.until)
        for name, seconds in parts:
            print(f"{seconds:6.2f} CPU s  {name}")
        print(f"{sum(s for _, s in parts):6.2f} CPU s  in all, to the evaluation at step {args.until} ({load()})")
        return [info(f"{name}, one thread", seconds, "CPU s") for name, seconds in parts] + [
            info(f"in all, to the evaluation at step {args.until}", sum(s for _, s in parts), "CPU s")]

    from explorer.callbacks.train import start_training
    from explorer.state.session import new_session

    torch.set_num_threads(1)  # the server's default
    print(load())
    if not args.cold:
        print(f"forkserver started and ready in {warm_forkserver():.2f} s")
    session, values = new_session(), start_values(args.preset)
    began = time.perf_counter()
    start_training(session, *values)
    started = time.perf_counter() - began
    print(f"{started:6.2f} s  Start returned (model built, data ready, slot taken)")
    try:
        events = timeline(session, began, args.until, args.timeout)
        for seconds, text, _ in events:
            print(f"{seconds:6.2f} s  {text}")
    finally:
        session.workspace.stop_training()
        while session.workspace.run.active:
            time.sleep(0.05)
    print(load())
    return timeline_rows(events, started)


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
