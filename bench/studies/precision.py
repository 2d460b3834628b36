"""python -m bench.studies.precision: does bf16 autocast pay on this machine? Training steps/s, fp32 vs bf16.

Interleaved rounds at the classroom shape (~0.8M parameters) and at ~10M parameters (6 x 384, block 128)."""
import torch

from bench.timing import interleaved_seconds, print_table
from model_core import GPT, GPTConfig
from model_core.training.precision import autocast, bf16_supported

SHAPES = {  # name: (n_layers, n_heads, d_model, block_size, batch_size)
    "classroom (0.8M)": (4, 4, 128, 64, 32),
    "10M": (6, 6, 384, 128, 16),
}
CPU = torch.device("cpu")


def training_step(precision: str, n_layers, n_heads, d_model, block, batch):
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=65, block_size=block, d_model=d_model, n_heads=n_heads, n_layers=n_layers))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randint(0, 65, (batch, block)), torch.randint(0, 65, (batch, block))

    def step():
        with autocast(CPU, precision):
            _, loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step, model.num_params()


def row(shape: str, rounds: int, repeats: int) -> list:
    fp32, n = training_step("fp32", *SHAPES[shape])
    bf16, _ = training_step("bf16", *SHAPES[shape])
    t = interleaved_seconds({"fp32": fp32, "bf16": bf16}, rounds=rounds, repeats=repeats)
    speedup = t["fp32"] / t["bf16"]
    return [shape, f"{n:,}", f"{1 / t['fp32']:.2f}", f"{1 / t['bf16']:.2f}", f"{speedup:.2f}",
            "bf16 pays" if speedup > 1.1 else "stay fp32"]


def main() -> int:
    flags = {f: getattr(torch.cpu, f"_is_{f}_supported", lambda: False)() for f in ("avx512_bf16", "amx_tile")}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; CPU bf16 support: {flags}, "
          f"native bf16: {bf16_supported(CPU)}")
    rows = [row("classroom (0.8M)", rounds=8, repeats=5), row("10M", rounds=4, repeats=2)]
    print_table("Training steps/s, fp32 vs bf16 autocast (same model, same batch)",
                ["shape", "params", "fp32 steps/s", "bf16 steps/s", "speed-up", ""], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
