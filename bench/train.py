"""python -m bench.train: the classroom preset against the clock, and the Trainer against a plain loop.

Targets: val loss <= 1.75 on Shakespeare within 90 s of wall time (final evaluation included);
Trainer.step() steps/s >= 0.97x a plain nanoGPT-style training loop at the same shape and batch.
--vs-reference [--runs N] [--ablation]: the nanoGPT CPU recipe against the fast preset (bench.vs_reference)."""
import argparse
import dataclasses
import os
import time

import torch

from bench import vs_reference as vs
from bench.reference_gpt import PlainGPT
from bench.results import Row, at_least, at_most, info, run_main
from bench.timing import interleaved_seconds, print_table
from model_core.data.corpora import load_corpus
from model_core.data.dataset import get_batch, token_tensor, train_val_split
from model_core.data.tokenization import build_tokenizer
from model_core.model.gpt import GPT
from model_core.training.presets import get_preset
from model_core.training.trainer import Trainer

TARGET_VAL_LOSS = 1.75
THROUGHPUT_TARGET = 0.97  # Trainer.step() steps/s against the plain loop's
VS_MARGIN, VS_CEILING = 0.25, 1.65  # --vs-reference target: fast <= reference - 0.25 and <= 1.65
FINAL_EVAL_ITERS = 50  # batches per split in the final evaluation: a stable number, ~2 s on 2 cores
PRESET = get_preset("classroom")


def shakespeare_splits():
    text = load_corpus("shakespeare")
    tokenizer = build_tokenizer("char", text)
    return tokenizer, *train_val_split(token_tensor(tokenizer.encode(text)))


def forward_seconds(model, data: torch.Tensor, batch_size: int) -> float:
    """Seconds of one evaluation forward pass (median of 3), to reserve time for the final evaluation."""
    x, y = get_batch(data, model.cfg.block_size, batch_size, torch.Generator().manual_seed(0))
    times = []
    with torch.inference_mode():
        for _ in range(4):
            start = time.perf_counter()
            model(x, y)
            times.append(time.perf_counter() - start)
    return sorted(times[1:])[1]


def budget_run(seconds: float) -> tuple[list, list[Row]]:
    """Train the classroom preset for `seconds` of wall time, the final evaluation included: (table row, rows)."""
    tokenizer, train_data, val_data = shakespeare_splits()
    started = time.perf_counter()
    cfg = PRESET.train_config(device="cpu", max_steps=1_000_000)  # the clock ends the run, not the step count
    torch.manual_seed(cfg.seed)
    trainer = Trainer(GPT(PRESET.model_config(tokenizer.vocab_size)), train_data, val_data, cfg, tokenizer)
    reserve = 1.3 * 2 * FINAL_EVAL_ITERS * forward_seconds(trainer.model, val_data, cfg.batch_size) + 0.5
    trainer.run(max_seconds=seconds - reserve - (time.perf_counter() - started))
    trainer.cfg = dataclasses.replace(cfg, eval_iters=FINAL_EVAL_ITERS)
    final = trainer.evaluate()
    wall = time.perf_counter() - started
    tokens_per_sec = trainer.step_count * cfg.batch_size * trainer.block_size / max(trainer.elapsed, 1e-9)
    ok = final["val_loss"] <= TARGET_VAL_LOSS and wall <= seconds
    table = [f"classroom, batch {cfg.batch_size}, lr {cfg.lr:g}", trainer.step_count, f"{final['train_loss']:.3f}",
             f"{final['val_loss']:.3f}", f"{tokens_per_sec:,.0f}", f"{wall:.1f}", f"{os.getloadavg()[0]:.2f}",
             "PASS" if ok else "FAIL"]
    run = f"classroom preset, Shakespeare, {seconds:g} s"
    return table, [at_most(f"{run}: val loss", final["val_loss"], "", TARGET_VAL_LOSS),
                   at_most(f"{run}: wall time, final evaluation included", wall, "s", seconds),
                   info(f"{run}: steps", trainer.step_count), info(f"{run}: training tokens/s", tokens_per_sec)]


def plain_loop_step(model, optimizer, data: torch.Tensor, block_size: int, batch_size: int, generator):
    """nanoGPT's loop body: batch, forward, backward, clip, step."""
    def step():
        x, y = get_batch(data, block_size, batch_size, generator)
        _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()
    return step


def throughput_ratio(rounds: int, repeats: int) -> tuple[list, Row]:
    """Trainer.step() with our hooked GPT vs a plain loop with PlainGPT and a stock AdamW (same design:
    gpt2-classic, so the ratio measures the hook machinery and the Trainer, not the architecture)."""
    tokenizer, train_data, val_data = shakespeare_splits()
    classic = get_preset("gpt2-classic")
    cfg = classic.train_config(device="cpu", eval_interval=0, snapshot_interval=0)
    m = classic.model
    torch.manual_seed(0)
    trainer = Trainer(GPT(classic.model_config(tokenizer.vocab_size)), train_data, val_data, cfg, tokenizer)
    torch.manual_seed(0)
    plain = PlainGPT(tokenizer.vocab_size, m["block_size"], m["d_model"], m["n_heads"], m["n_layers"]).train()
    optimizer = torch.optim.AdamW(plain.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    plain_step = plain_loop_step(plain, optimizer, train_data, m["block_size"], cfg.batch_size,
                                 torch.Generator().manual_seed(cfg.seed))
    trainer.model.train()
    t = interleaved_seconds({"trainer": trainer.step, "plain": plain_step}, rounds=rounds, repeats=repeats)
    ratio = t["plain"] / t["trainer"]
    return ([f"gpt2-classic, batch {cfg.batch_size}", f"{1 / t['trainer']:.2f}", f"{1 / t['plain']:.2f}",
             f"{ratio:.3f}", f"{os.getloadavg()[0]:.2f}", "ok" if ratio >= THROUGHPUT_TARGET else "BELOW TARGET"],
            at_least(f"Trainer.step() steps/s / a plain loop's, gpt2-classic batch {cfg.batch_size}", ratio, "x",
                     THROUGHPUT_TARGET))


def vs_reference(runs: int, ablation: bool, preset_name: str) -> list[Row]:
    """The nanoGPT recipe, then the preset for the reference's wall time W, `runs` times; optionally the
    ablation table against the last run's reference and W."""
    splits = vs.shakespeare_splits()
    rows, deltas, results = [], [], []
    for i in range(runs):
        ref = vs.reference_run(splits)
        fast = vs.preset_run(splits, preset_name, ref.train_seconds)
        deltas.append(fast.val_loss - ref.val_loss)
        ok = fast.val_loss <= ref.val_loss - VS_MARGIN and fast.val_loss <= VS_CEILING
        race = f"race {i + 1}: '{preset_name}' for the nanoGPT recipe's {ref.train_seconds:.0f} s"
        results += [at_most(f"{race}: val loss - the recipe's ({ref.val_loss:.3f})", deltas[-1], "", -VS_MARGIN),
                    at_most(f"{race}: val loss", fast.val_loss, "", VS_CEILING)]
        for r in (ref, fast):
            rows.append([i + 1, *vs.result_row(r, ref), f"{os.getloadavg()[0]:.2f}",
                         "" if r is ref else ("PASS" if ok else "FAIL")])
        print(f"run {i + 1}: reference {ref.val_loss:.3f} in {ref.train_seconds:.1f} s, {preset_name} "
              f"{fast.val_loss:.3f} ({fast.steps} steps)", flush=True)
    print_table(f"nanoGPT CPU recipe vs '{preset_name}' in the same wall time W, block 64, Shakespeare (char); "
                f"val loss over the same {vs.FINAL_EVAL_ITERS} x {vs.EVAL_BATCH} windows "
                f"(target: <= reference - {VS_MARGIN} and <= {VS_CEILING})",
                ["run", "model", "steps", "train s", "val loss", "vs ref", "load", ""], rows)
    print(f"difference over {runs} runs: mean {sum(deltas) / len(deltas):+.3f}, "
          f"min {min(deltas):+.3f}, max {max(deltas):+.3f}")
    if ablation:
        table = vs.ablation_rows(splits, ref.train_seconds, ref, preset_name)
        print_table(f"Ablation: '{preset_name}' with one choice changed, each for W = {ref.train_seconds:.1f} s "
                    f"(reference val {ref.val_loss:.3f})", ["variant", "steps", "train s", "val loss", "vs ref"], table)
        results += [info(f"ablation: {name.strip()}: val loss - the recipe's", float(delta))
                    for name, *_, delta in table]
    return results


def measure(argv=None) -> list[Row]:
    p = argparse.ArgumentParser(prog="python -m bench.train", description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=90.0, help="wall-time budget of the classroom run")
    p.add_argument("--rounds", type=int, default=12, help="interleaved rounds of the throughput comparison")
    p.add_argument("--vs-reference", action="store_true",
                   help="only: the nanoGPT CPU recipe, then the classroom preset for the same wall time")
    p.add_argument("--runs", type=int, default=1, help="repetitions of --vs-reference (report the spread)")
    p.add_argument("--ablation", action="store_true", help="with --vs-reference: what each choice buys")
    p.add_argument("--preset", default="classroom", help="preset raced against the reference")
    args = p.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs")
    if args.vs_reference:
        return vs_reference(max(1, args.runs), args.ablation, args.preset)
    throughput_table, throughput = throughput_ratio(args.rounds, repeats=8)
    print_table(f"Trainer.step() vs a plain training loop (target ratio >= {THROUGHPUT_TARGET})",
                ["shape", "trainer steps/s", "plain steps/s", "ratio", "load", ""], [throughput_table])
    budget_table, budget = budget_run(args.seconds)
    print_table(f"Classroom preset on Shakespeare in {args.seconds:g} s wall, evaluation included "
                f"(target val loss <= {TARGET_VAL_LOSS}; final eval over {FINAL_EVAL_ITERS} batches per split)",
                ["run", "steps", "train loss", "val loss", "tokens/s", "wall s", "load", ""], [budget_table])
    return [throughput, *budget]


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
