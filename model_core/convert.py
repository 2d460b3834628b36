"""Open models trained elsewhere:  python -m model_core.convert {nanogpt,hf,gguf} SOURCE --out DIR

  nanogpt  a nanoGPT run directory (ckpt.pt, meta.pkl)
  hf       a Hugging Face model folder (config.json, model.safetensors, tokenizer.json) of a gpt2, llama,
           qwen2 or gpt_neox model
  gguf     a GGUF file (llama.cpp's format) of a llama or qwen2 model, quantised weights dequantised"""
import argparse
import sys
from pathlib import Path
from typing import Optional

from model_core.checkpoints.checkpoint import Checkpoint, save_checkpoint
from model_core.checkpoints.convert_error import ConvertError
from model_core.checkpoints.nanogpt import convert_nanogpt


def find_meta(ckpt_dir: Path, meta: Optional[str]) -> Optional[Path]:
    """--meta if given, else meta.pkl beside ckpt.pt."""
    if meta:
        return Path(meta)
    return ckpt_dir / "meta.pkl" if (ckpt_dir / "meta.pkl").is_file() else None


def nanogpt_checkpoint(args) -> Checkpoint:
    src = Path(args.source)
    ckpt_path = src if src.is_file() else src / "ckpt.pt"
    if not ckpt_path.is_file():
        raise ConvertError(f"no ckpt.pt in {src}: give the nanoGPT run directory (its out_dir).")
    return convert_nanogpt(ckpt_path, find_meta(ckpt_path.parent, args.meta))


def hf_checkpoint(args) -> Checkpoint:
    from model_core.checkpoints.hf import load_hf_folder

    return load_hf_folder(args.source, args.block_size)


def gguf_checkpoint(args) -> Checkpoint:
    from model_core.checkpoints.gguf import load_gguf

    return load_gguf(args.source, args.block_size)


LOADERS = {"nanogpt": nanogpt_checkpoint, "hf": hf_checkpoint, "gguf": gguf_checkpoint}  # kind -> (parsed arguments -> Checkpoint)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model_core.convert", description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(LOADERS), help="where the model comes from")
    parser.add_argument("source", help="nanogpt: the run directory holding ckpt.pt (or the ckpt.pt file itself); "
                                       "hf: the folder holding config.json, model.safetensors and tokenizer.json; "
                                       "gguf: the .gguf file")
    parser.add_argument("--out", required=True, help="directory to write our checkpoint to")
    parser.add_argument("--meta", help="nanogpt: its meta.pkl (default: meta.pkl beside ckpt.pt)")
    parser.add_argument("--block-size", type=int, help="hf, gguf: the context to keep (default: the model's own, at most "
                                                        "1024); attention maps grow with its square")
    args = parser.parse_args(argv)
    try:
        ckpt = LOADERS[args.kind](args)
        out = save_checkpoint(ckpt, args.out)
    except ValueError as err:  # ConvertError, UnsafePickleError, CheckpointError: messages written for users
        print(f"error: {err}", file=sys.stderr)
        return 1
    cfg = ckpt.model.cfg
    print(f"wrote {out}: {cfg.n_layers} layers x {cfg.n_heads} heads ({cfg.kv_heads} key/value), d_model "
          f"{cfg.d_model}, context {cfg.block_size}, vocabulary {cfg.vocab_size}, {ckpt.model.num_params():,} "
          "parameters; open it in the app or with load_checkpoint.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
