"""python -m bench.core: our hooked GPT vs a plain reference GPT, side by side.

Targets: training steps/s ratio >= 0.97 at both shapes; full-cache forward <= 1.5x plain forward."""
import argparse

import torch

from bench.reference_gpt import PlainGPT
from bench.results import Row, at_least, at_most, run_main
from bench.timing import interleaved_seconds, print_table
from model_core import GPT, GPTConfig

SHAPES = {  # name: (n_layers, n_heads, d_model, block_size, batch_size)
    "4L-128": (4, 4, 128, 64, 32),  # nanoGPT's CPU shape (gpt2-classic, the shipped model)
    "6L-384": (6, 6, 384, 128, 8),
}
VOCAB = 65
TRAIN_TARGET, CACHE_TARGET = 0.97, 1.5


def training_step(model, opt, x, y):
    def step():
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def models_for(n_layers, n_heads, d_model, block):
    torch.manual_seed(0)
    ours = GPT(GPTConfig(vocab_size=VOCAB, block_size=block, d_model=d_model, n_heads=n_heads, n_layers=n_layers))
    torch.manual_seed(0)
    plain = PlainGPT(VOCAB, block, d_model, n_heads, n_layers)
    return ours, plain


def train_ratio(shape, rounds: int, repeats: int) -> tuple[list, Row]:
    """(the table row, the target row) of training steps/s, ours against plain."""
    n_layers, n_heads, d_model, block, batch = SHAPES[shape]
    ours, plain = models_for(n_layers, n_heads, d_model, block)
    x = torch.randint(0, VOCAB, (batch, block))
    y = torch.randint(0, VOCAB, (batch, block))
    steps = {
        "ours": training_step(ours.train(), torch.optim.AdamW(ours.parameters(), lr=1e-3), x, y),
        "plain": training_step(plain.train(), torch.optim.AdamW(plain.parameters(), lr=1e-3), x, y),
    }
    t = interleaved_seconds(steps, rounds=rounds, repeats=repeats)
    ratio = t["plain"] / t["ours"]
    verdict = "ok" if ratio >= TRAIN_TARGET else "BELOW TARGET"
    return ([shape, f"{1 / t['ours']:.2f}", f"{1 / t['plain']:.2f}", f"{ratio:.3f}", verdict],
            at_least(f"training steps/s, hooked GPT / plain, {shape} batch {batch}", ratio, "x", TRAIN_TARGET))


def cache_ratio(shape, batch: int, rounds: int, repeats: int) -> tuple[list, Row]:
    """(the table row, the target row) of a forward pass with the full activation cache against a plain one."""
    n_layers, n_heads, d_model, block, _ = SHAPES[shape]
    ours, _ = models_for(n_layers, n_heads, d_model, block)
    ours.eval()
    x = torch.randint(0, VOCAB, (batch, block))

    def plain_forward():
        with torch.no_grad():
            ours(x)

    t = interleaved_seconds({"plain": plain_forward, "cache": lambda: ours.run_with_cache(x)},
                            rounds=rounds, repeats=repeats)
    ratio = t["cache"] / t["plain"]
    verdict = "ok" if ratio <= CACHE_TARGET else "ABOVE TARGET"
    return ([f"{shape} batch {batch}", f"{t['plain'] * 1e3:.2f}", f"{t['cache'] * 1e3:.2f}", f"{ratio:.2f}", verdict],
            at_most(f"forward with the full cache / plain, {shape} batch {batch}", ratio, "x", CACHE_TARGET))


def measure(argv=None) -> list[Row]:
    argparse.ArgumentParser(prog="python -m bench.core", description=__doc__.splitlines()[0]).parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    train = [train_ratio("4L-128", rounds=12, repeats=5), train_ratio("6L-384", rounds=6, repeats=2)]
    print_table(f"Training steps/s: hooked GPT vs plain reference (target ratio >= {TRAIN_TARGET})",
                ["shape", "ours steps/s", "plain steps/s", "ratio", ""], [table for table, _ in train])
    cache = [cache_ratio("4L-128", 1, 20, 20), cache_ratio("4L-128", 32, 10, 3), cache_ratio("6L-384", 1, 10, 5)]
    print_table(f"Forward: full activation cache vs plain (target <= {CACHE_TARGET}x)",
                ["shape", "plain ms", "full cache ms", "ratio", ""], [table for table, _ in cache])
    return [row for _, row in train + cache]


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
