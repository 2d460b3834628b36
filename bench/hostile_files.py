"""The crafted files of bench.hostile_class (issue #28's "Why" list), each small to build and none allocating the
big thing it describes: a 1 kB nanoGPT checkpoint claiming 24 layers of width 8,192, a BPE checkpoint whose chat
template loops for minutes, a checkpoint whose snapshots.json has "head_stats": [], a 20 MB text of unique
words. Written into a folder by write_all(); nothing here talks to the app."""
import io
import json
import pickle
import random
import string
import zipfile
from pathlib import Path

LOOPING_TEMPLATE = ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
                    "{{ messages[0]['content'] }}")
TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n" * 40


def absurd_nanogpt(folder: Path) -> tuple[Path, Path]:
    """(ckpt.pt of about 1 kB whose model_args say n_layer 24, n_embd 8192 (about 19 G parameters), meta.pkl)."""
    import torch

    model_args = dict(n_layer=24, n_head=64, n_embd=8192, block_size=256, bias=False, vocab_size=65, dropout=0.0)
    ckpt = folder / "ckpt.pt"
    torch.save({"model_args": model_args, "model": {}, "iter_num": 0, "best_val_loss": 1.0}, ckpt)
    chars = (sorted(set(TEXT)) + [c for c in string.printable if c not in TEXT])[:65]  # the vocabulary it claims
    meta = folder / "meta.pkl"
    meta.write_bytes(pickle.dumps({"vocab_size": len(chars), "stoi": {c: i for i, c in enumerate(chars)},
                                   "itos": dict(enumerate(chars))}))
    return ckpt, meta


def _tiny_checkpoint(kind: str = "char", chat_template=None):
    from model_core import GPT, GPTConfig
    from model_core.checkpoints.checkpoint import Checkpoint
    from model_core.data.tokenization import build_tokenizer

    tok = build_tokenizer(kind, TEXT, 300) if kind == "bpe" else build_tokenizer(kind, TEXT)
    if chat_template is not None:
        tok.chat_template = chat_template
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=32, d_model=32, n_heads=2, n_layers=1))
    return Checkpoint(model.eval(), tok)


def _zip(files: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def looping_chat_model(folder: Path) -> Path:
    """A BPE checkpoint .zip whose chat template runs 10^10 loop steps before writing anything."""
    from model_core.checkpoints.checkpoint import checkpoint_files

    path = folder / "looping-chat.zip"
    path.write_bytes(_zip(checkpoint_files(_tiny_checkpoint("bpe", LOOPING_TEMPLATE))))
    return path


def empty_head_stats(folder: Path) -> Path:
    """A checkpoint .zip whose snapshots.json has one snapshot with "head_stats": [] (a list, not a dict)."""
    import numpy as np

    from model_core.checkpoints.checkpoint import checkpoint_files
    from model_core.training.snapshots import Snapshot

    ckpt = _tiny_checkpoint()
    probe = [0, 1, 2, 3]
    snapshot = Snapshot(1, 3.0, None, probe, np.zeros((1, 2, len(probe), len(probe)), np.uint8)).to_dict()
    files = checkpoint_files(ckpt)
    files["snapshots.json"] = json.dumps([{**snapshot, "head_stats": []}]).encode()
    path = folder / "empty-head-stats.zip"
    path.write_bytes(_zip(files))
    return path


def unique_words(folder: Path, megabytes: float = 20.0) -> Path:
    """A text of random unique words, just under the upload cap (a word tokenizer's vocabulary is every one)."""
    rng = random.Random(0)
    words, size = [], 0
    while size < megabytes * 1e6 - 100:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(6, 12)))
        words.append(word)
        size += len(word) + 1
    path = folder / "unique-words.txt"
    path.write_text(" ".join(words)[:int(megabytes * 1e6) - 10])
    return path
