"""Open models trained elsewhere:  python -m model_core.convert nanogpt CKPT_DIR --out DIR"""
import argparse
import sys
from pathlib import Path
from typing import Optional

from model_core.checkpoints.checkpoint import save_checkpoint
from model_core.checkpoints.nanogpt import ConvertError, convert_nanogpt


def find_meta(ckpt_dir: Path, meta: Optional[str]) -> Optional[Path]:
    """--meta if given, else meta.pkl beside ckpt.pt."""
    if meta:
        return Path(meta)
    return ckpt_dir / "meta.pkl" if (ckpt_dir / "meta.pkl").is_file() else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model_core.convert", description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["nanogpt"], help="where the model comes from")
    parser.add_argument("ckpt_dir", help="the run directory holding ckpt.pt (or the ckpt.pt file itself)")
    parser.add_argument("--out", required=True, help="directory to write our checkpoint to")
    parser.add_argument("--meta", help="nanoGPT's meta.pkl (default: meta.pkl beside ckpt.pt)")
    args = parser.parse_args(argv)
    src = Path(args.ckpt_dir)
    ckpt_path = src if src.is_file() else src / "ckpt.pt"
    try:
        if not ckpt_path.is_file():
            raise ConvertError(f"no ckpt.pt in {src}: give the nanoGPT run directory (its out_dir).")
        ckpt = convert_nanogpt(ckpt_path, find_meta(ckpt_path.parent, args.meta))
        out = save_checkpoint(ckpt, args.out)
    except ValueError as err:  # ConvertError, UnsafePickleError, CheckpointError: messages written for users
        print(f"error: {err}", file=sys.stderr)
        return 1
    cfg = ckpt.model.cfg
    print(f"wrote {out}: {cfg.n_layers} layers x {cfg.n_heads} heads, d_model {cfg.d_model}, vocabulary "
          f"{cfg.vocab_size}, {ckpt.model.num_params():,} parameters; open it in the app or with load_checkpoint.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
