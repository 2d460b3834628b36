"""Which variant of a preset trains best in the nanoGPT recipe's time, with no timing noise in the losses.

A race of wall-clock budgets is noisy on a shared machine (one configuration got 513 and 575 steps in two 90-s
runs of the same hour), so candidates are compared in two steps:
1. budgets: interleaved rounds time 10 steps of each candidate and of the reference recipe
   (bench.vs_reference); a candidate's budget is the steps it gets in the reference's 2,000-step time;
2. losses: each candidate trains exactly its budget (cosine over it, the preset's seed), so its loss is the
   same on every run, and is scored on the race's validation windows (bench.vs_reference.val_loss).
--steps skips step 1 and reproduces a table's losses exactly.

python -m bench.studies.shapes [--preset classroom] [--rounds 6] [--steps N ...] CANDIDATE ...
a candidate: GPTConfig / TrainConfig overrides, e.g. n_layers=4,d_mlp=512  n_layers=3,muon_lr=0.03  preset"""
import argparse
import itertools
from dataclasses import fields

from bench import vs_reference as vs
from bench.timing import interleaved_seconds, print_table
from model_core.model.config import GPTConfig

MODEL_FIELDS = {f.name for f in fields(GPTConfig)}
AS_IS = "preset"  # the candidate without overrides


def candidate(text: str) -> tuple[dict, dict]:
    """'n_layers=3,d_mlp=256,muon_lr=0.03' -> (GPTConfig overrides, TrainConfig overrides)."""
    model, train = {}, {}
    for item in filter(None, "" if text == AS_IS else text.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"candidate {text!r}: write each override as name=value, e.g. n_layers=3")
        (model if key in MODEL_FIELDS else train)[key.strip()] = parsed(value.strip())
    return model, train


def parsed(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def step_budgets(splits, preset: str, candidates: list[str], rounds: int) -> dict[str, int]:
    """Steps each candidate gets in the time the reference takes for its 2,000 iterations."""
    _, reference_step = vs.reference_stepper(splits)
    iteration = itertools.count()
    contenders = {AS_IS + " (reference)": lambda: reference_step(next(iteration) % vs.REFERENCE["iters"])}
    for text in candidates:
        contenders[text] = vs.preset_trainer(splits, preset, *candidate(text)).step
    seconds = interleaved_seconds(contenders, rounds, repeats=10)
    reference = seconds[AS_IS + " (reference)"]
    return {text: round(vs.REFERENCE["iters"] * reference / seconds[text]) for text in candidates}


def fixed_step_loss(splits, preset: str, text: str, steps: int) -> float:
    """Validation loss after exactly `steps` steps of the candidate (the cosine ends there)."""
    trainer = vs.preset_trainer(splits, preset, *candidate(text), max_steps=steps)
    trainer.run(max_steps=steps)
    return vs.val_loss(trainer.model, splits[2])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.studies.shapes", description=__doc__.splitlines()[0])
    p.add_argument("candidates", nargs="+", help=f"overrides like n_layers=3,d_mlp=256, or '{AS_IS}'")
    p.add_argument("--preset", default="classroom")
    p.add_argument("--rounds", type=int, default=6, help="interleaved timing rounds")
    p.add_argument("--steps", type=int, nargs="+", help="one step budget per candidate instead of timing them")
    args = p.parse_args(argv)
    if args.steps and len(args.steps) != len(args.candidates):
        p.error(f"--steps needs one budget per candidate ({len(args.candidates)}), got {len(args.steps)}")
    for text in args.candidates:
        candidate(text)  # a malformed one fails before anything trains
    splits = vs.shakespeare_splits()
    budgets = dict(zip(args.candidates, args.steps)) if args.steps else \
        step_budgets(splits, args.preset, args.candidates, args.rounds)
    rows = []
    for text in args.candidates:
        loss = fixed_step_loss(splits, args.preset, text, budgets[text])
        rows.append([text, budgets[text], f"{loss:.4f}"])
        print(f"{text}: {budgets[text]} steps, val {loss:.4f}", flush=True)
    print_table(f"'{args.preset}' variants, each trained for the steps it gets in the nanoGPT recipe's time "
                f"(val loss over the race's {vs.FINAL_EVAL_ITERS} x {vs.EVAL_BATCH} windows)",
                ["candidate", "steps", "val loss"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
