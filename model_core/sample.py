"""Sample text from a saved model:  python -m model_core.sample --checkpoint runs/x --prompt "ROMEO:" """
import argparse
import sys

from model_core.checkpoints.checkpoint import load_checkpoint
from model_core.model.sampling import generate
from model_core.train import OneLineParser


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m model_core.sample", description="Generate text with a trained model.")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory (or .zip) written by model_core.train")
    p.add_argument("--prompt", default="\n", help="text to continue (default: a newline)")
    p.add_argument("--max-new-tokens", type=int, default=200, help="tokens to generate per sample")
    p.add_argument("--temperature", type=float, default=1.0, help="below 1: safer text; above 1: wilder; 0: greedy")
    p.add_argument("--top-k", type=int, help="sample only among the k most likely tokens")
    p.add_argument("--top-p", type=float, default=1.0, help="sample from the smallest set holding this probability")
    p.add_argument("--seed", type=int, help="random seed; the same seed gives the same text")
    p.add_argument("--num-samples", type=int, default=1, help="how many samples to print")
    p.add_argument("--stop-at", help="end a sample once this token is generated, e.g. '<EOS>' or a newline")
    return p


def samples(args) -> list[str]:
    """The generated texts (prompt included) for parsed args."""
    ckpt = load_checkpoint(args.checkpoint)
    if ckpt.tokenizer is None:
        raise ValueError(f"{args.checkpoint} has no tokenizer saved, so text cannot be encoded.")
    if args.num_samples < 1 or args.max_new_tokens < 0:
        raise ValueError("--num-samples must be at least 1 and --max-new-tokens at least 0.")
    prompt_ids = ckpt.tokenizer.encode(args.prompt)
    stop = stop_token(ckpt.tokenizer, args.stop_at)
    texts = []
    for i in range(args.num_samples):
        seed = None if args.seed is None else args.seed + i
        steps = generate(ckpt.model, prompt_ids, args.max_new_tokens, temperature=args.temperature,
                         top_k=args.top_k, top_p=args.top_p, seed=seed, stop_token=stop)
        texts.append(ckpt.tokenizer.decode(prompt_ids + [s.token for s in steps]))
    return texts


def stop_token(tokenizer, text):
    """The id of --stop-at's single token (None without it); ValueError when it is not one token."""
    if text is None:
        return None
    ids = tokenizer.encode(text)
    if len(ids) != 1:
        raise ValueError(f"--stop-at {text!r} is {len(ids)} tokens for this tokenizer; give exactly one token.")
    return ids[0]


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        texts = samples(args)
    except ValueError as err:  # CheckpointError, UnknownTokenError, SamplingError all carry the fix
        print(f"error: {err}", file=sys.stderr)
        return 1
    print("\n----------\n".join(texts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
