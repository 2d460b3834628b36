"""Crafted files a mischievous student could upload or convert, each small to build, and how the loaders answer.

`python -m bench.hostile_files [--out DIR] [--limit-gb 2] [NAME ...]` builds every case, then loads each in a
fresh child process under RLIMIT_AS (a loader that tried to allocate what the file asks for fails there
instead of taking the machine) and reports, per case: the answer (the sentence, or what was served), the time
to that answer and the child's peak RSS, and its growth over the imports. tests/test_hostile_files.py loads
the same files under the same limit and checks each answer."""
import argparse
import io
import json
import os
import pickle
import resource
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from bench.server_process import rss_mb

ROOT = Path(__file__).resolve().parent.parent
TEXT = "the quick brown fox jumps over the lazy dog 123. aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa! " * 20
LIMIT_GB = 2.0  # address space of a loading child: the imports take ~1 GB, every crafted file asks for more


# ---------------------------------------------------------------- nanoGPT

def write_nanogpt(folder: Path, model_args: dict, weights: dict) -> None:
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    torch.save({"model_args": model_args, "model": weights, "iter_num": 1}, folder / "ckpt.pt")
    chars = [chr(32 + i) for i in range(model_args["vocab_size"])]
    meta = {"stoi": {c: i for i, c in enumerate(chars)}, "itos": dict(enumerate(chars)), "vocab_size": len(chars)}
    (folder / "meta.pkl").write_bytes(pickle.dumps(meta))


def nanogpt_wide(folder: Path) -> None:
    """1 kB ckpt.pt whose model_args ask for 24 layers of width 8,192: ~19 G parameters (the issue's crash)."""
    write_nanogpt(folder, dict(n_layer=24, n_head=16, n_embd=8192, block_size=256, vocab_size=65, bias=False), {})


def nanogpt_many_params(folder: Path) -> None:
    """Within every single size cap (24 layers, width 4,096, 64 heads, block 64): 4.8 G parameters in all."""
    write_nanogpt(folder, dict(n_layer=24, n_head=64, n_embd=4096, block_size=64, vocab_size=65, bias=False), {})


def nanogpt_stride0(folder: Path) -> None:
    """A tiny model whose embedding is a view of one number shaped (65, 10^9): ~65 G values, 4 bytes of file."""
    import torch

    huge = torch.zeros(1).expand(65, 10 ** 9)
    write_nanogpt(folder, dict(n_layer=1, n_head=1, n_embd=8, block_size=8, vocab_size=65, bias=False),
                  {"transformer.wte.weight": huge})


def nanogpt_compressed(folder: Path) -> None:
    """ckpt.pt whose tensor record is deflated and claims 3 GiB once inflated (torch.load allocates what it claims)."""
    import torch

    buffer = io.BytesIO()
    model_args = dict(n_layer=1, n_head=1, n_embd=8, block_size=8, vocab_size=65, bias=False)
    torch.save({"model_args": model_args, "model": {"w": torch.zeros(4)}}, buffer)
    source, out = zipfile.ZipFile(buffer), io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in source.infolist():
            packing = zipfile.ZIP_DEFLATED if info.filename.endswith("/data/0") else zipfile.ZIP_STORED
            zf.writestr(info.filename, source.read(info.filename), compress_type=packing)
    data = bytearray(out.getvalue())
    name = next(i.filename for i in source.infolist() if i.filename.endswith("/data/0")).encode()
    at = data.find(b"PK\x01\x02")  # the central directory's entries, one of which is the record's
    while data[at + 46:at + 46 + len(name)] != name:
        at = data.find(b"PK\x01\x02", at + 4)
    data[at + 24:at + 28] = struct.pack("<I", 3 << 30)  # its uncompressed size: 3 GiB
    write_nanogpt(folder, model_args, {})
    (folder / "ckpt.pt").write_bytes(bytes(data))


# ---------------------------------------------------------------- our .zip

def tiny_bpe_checkpoint(tokenizer_json: str = None, chat_template: str = None):
    """(checkpoint files, config dict) of a tiny model with a BPE tokenizer, its JSON optionally replaced."""
    import torch

    from model_core import GPT, GPTConfig
    from model_core.checkpoints.checkpoint import Checkpoint, checkpoint_files
    from model_core.data.tokenization import BPETokenizer

    tokenizer = BPETokenizer.train(TEXT, 260)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=16, d_model=8, n_heads=2, n_layers=1))
    files = checkpoint_files(Checkpoint(model.eval(), tokenizer, corpus="crafted"))
    config = json.loads(files["config.json"])
    if tokenizer_json is not None:
        config["tokenizer"]["tokenizer_json"] = tokenizer_json
    if chat_template is not None:
        config["tokenizer"]["chat_template"] = chat_template
    return files, config


def write_zip(path: Path, files: dict, config: dict) -> None:
    files = {**files, "config.json": json.dumps(config).encode()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)


def tokenizer_tree() -> dict:
    from model_core.data.tokenization import BPETokenizer

    return json.loads(BPETokenizer.train(TEXT, 260).hf.to_str())


def zip_with_tokenizer(folder: Path, change) -> None:
    tree = tokenizer_tree()
    change(tree)
    folder.mkdir(parents=True, exist_ok=True)
    write_zip(folder / "model.zip", *tiny_bpe_checkpoint(json.dumps(tree)))


def zip_tokenizer_panic(folder: Path) -> None:
    """A post-processor naming a special token it never defines: `tokenizers` panics on every encode."""
    zip_with_tokenizer(folder, lambda t: t.update(post_processor={
        "type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "X", "type_id": 0}}], "pair": [],
        "special_tokens": {}}))


def zip_tokenizer_precompiled(folder: Path) -> None:
    """A 'Precompiled' normalizer with a damaged table: `tokenizers` panics while loading it."""
    zip_with_tokenizer(folder, lambda t: t.update(normalizer={"type": "Precompiled", "precompiled_charsmap": "AAAA"}))


def zip_tokenizer_padding(folder: Path) -> None:
    """Padding to 10^12 tokens: `tokenizers` aborts the whole process (Rust's out-of-memory handler) on encode."""
    zip_with_tokenizer(folder, lambda t: t.update(padding={
        "strategy": {"Fixed": 10 ** 12}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
        "pad_type_id": 0, "pad_token": "a"}))


def zip_tokenizer_regex(folder: Path) -> None:
    """A Split regex that backtracks: Oniguruma gives up on 'aaaa...!' and `tokenizers` panics in encode."""
    zip_with_tokenizer(folder, lambda t: t.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(\\w+\\s?)*$"}, "behavior": "Isolated", "invert": False},
        t["pre_tokenizer"]]}))


def zip_chat_loops(folder: Path) -> None:
    """A chat template of two nested loops over range(100000): minutes of CPU per render."""
    folder.mkdir(parents=True, exist_ok=True)
    loops = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    write_zip(folder / "model.zip", *tiny_bpe_checkpoint(chat_template=loops))


def zip_chat_bomb(folder: Path) -> None:
    """A chat template printing 'x' * 8,000,000,000: 8 GB allocated before any check of its length."""
    folder.mkdir(parents=True, exist_ok=True)
    write_zip(folder / "model.zip", *tiny_bpe_checkpoint(chat_template="{{ 'x' * 8000000000 }}"))


def zip_history(folder: Path) -> None:
    """A config.json of 16 MB, nearly all history rows: ~75 MB once parsed, past a session's record budget."""
    files, config = tiny_bpe_checkpoint()
    row = {f"metric_{k}": 0.5 for k in range(10)}
    config["history"] = [row] * 90_000
    folder.mkdir(parents=True, exist_ok=True)
    write_zip(folder / "model.zip", files, config)


def zip_head_stats_list(folder: Path) -> None:
    """snapshots.json whose head_stats is a list, not an object (was an AttributeError)."""
    from model_core.training.snapshots import take_snapshot

    files, config = tiny_bpe_checkpoint()
    from model_core import GPT, GPTConfig

    model = GPT(GPTConfig(**config["model_config"]))
    snapshot = take_snapshot(model.eval(), [1, 2, 3], step=0).to_dict()
    snapshot["head_stats"] = []
    folder.mkdir(parents=True, exist_ok=True)
    write_zip(folder / "model.zip", {**files, "snapshots.json": json.dumps([snapshot]).encode()}, config)


def zip_wide(folder: Path) -> None:
    """Our .zip whose config asks for 24 layers of width 4,096 (4.8 G parameters), with 1 kB of weights."""
    files, config = tiny_bpe_checkpoint()
    config["model_config"].update(n_layers=24, d_model=4096, n_heads=64, d_mlp=16384, block_size=32)
    folder.mkdir(parents=True, exist_ok=True)
    write_zip(folder / "model.zip", files, config)


# ---------------------------------------------------------------- GGUF and Hugging Face folders

def write_gguf(path: Path, dims: dict, tensors: dict, tokens: int = 300) -> None:
    """A llama GGUF file with the given metadata numbers and raw tensors {name: (array, dtype)}."""
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "llama")
    for key, value in dims.items():
        writer.add_key_value(f"llama.{key}", value[0], value[1])
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"t{i}" for i in range(tokens)])
    for name, (array, raw_dtype, raw_shape) in tensors.items():
        writer.add_tensor(name, array, raw_shape=raw_shape, raw_dtype=raw_dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def gguf_dims(**numbers) -> dict:
    from gguf import GGUFValueType

    base = dict(block_count=1, context_length=64, embedding_length=8, feed_forward_length=16,
                **{"attention.head_count": 2, "attention.head_count_kv": 2}, vocab_size=300)
    base.update(numbers)
    return {k: (v, GGUFValueType.STRING if isinstance(v, str) else GGUFValueType.FLOAT32
                if isinstance(v, float) else GGUFValueType.UINT32) for k, v in base.items()}


def gguf_wide(folder: Path) -> None:
    """Metadata of 24 layers of width 8,192 (~19 G parameters) over a few bytes of tensors."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    write_gguf(folder / "model.gguf", gguf_dims(block_count=24, embedding_length=8192, feed_forward_length=22016,
                                                **{"attention.head_count": 64, "attention.head_count_kv": 64}),
               {"token_embd.weight": (np.zeros((4, 8), np.float32), None, None)})


def gguf_big_tensor(folder: Path, rows: int = 4_096) -> None:
    """A tiny model's metadata with an embedding of rows x 8,192 Q8_0 weights: rows x 32 kB of float32 once
    dequantised (128 MB for the default), which used to happen before any check."""
    import numpy as np
    from gguf import GGMLQuantizationType

    folder.mkdir(parents=True, exist_ok=True)
    raw = np.zeros((rows, 8192 // 32 * 34), np.uint8)  # Q8_0: a float16 scale and 32 int8 values per block
    write_gguf(folder / "model.gguf", gguf_dims(), {"token_embd.weight": (raw, GGMLQuantizationType.Q8_0, None)})


def gguf_text_width(folder: Path) -> None:
    """embedding_length written as text ("8" in quotes): was a raw TypeError."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    write_gguf(folder / "model.gguf", gguf_dims(embedding_length="8"),
               {"token_embd.weight": (np.zeros((4, 8), np.float32), None, None)})


def hf_wide(folder: Path) -> None:
    """A Hugging Face llama folder whose config.json asks for 24 layers of width 8,192, header-only weights."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 64,
        "intermediate_size": 22016, "num_hidden_layers": 24, "vocab_size": 300, "max_position_embeddings": 512,
        "rms_norm_eps": 1e-5, "tie_word_embeddings": True}))
    header = json.dumps({"model.embed_tokens.weight": {"dtype": "F32", "shape": [300, 8192],
                                                       "data_offsets": [0, 300 * 8192 * 4]}}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)


def text_unique_words(folder: Path) -> None:
    """20 MB of 2.5 million distinct words for the word tokenizer (kept ~0.3 GB as a vocabulary)."""
    import random
    import string

    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    words = ("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(2_500_000))
    (folder / "words.txt").write_text(" ".join(words))


# ---------------------------------------------------------------- loading, as the app or the CLI does

def load_case(name: str, folder: Path) -> str:
    """Load the case's file as its path in the app (or CLI) does: -> what was served, or raises."""
    from explorer.callbacks.models import upload_limits

    if name.startswith("nanogpt"):
        from model_core.checkpoints.nanogpt import convert_nanogpt

        ckpt = convert_nanogpt(folder / "ckpt.pt", folder / "meta.pkl", upload_limits())
        return f"loaded {ckpt.model.num_params():,} parameters"
    if name.startswith("zip"):
        from model_core.checkpoints.checkpoint import load_checkpoint_zip
        from model_core.data.chat import chat_prompt

        ckpt = load_checkpoint_zip(folder / "model.zip", upload_limits())
        ids = ckpt.tokenizer.encode("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!")
        if ckpt.tokenizer.chat_template:
            return f"chat prompt of {len(chat_prompt(ckpt.tokenizer.chat_template, 'hi'))} characters"
        return f"loaded; encoded a text to {len(ids)} tokens"
    if name.startswith("gguf"):
        from model_core.checkpoints.gguf import load_gguf

        return f"loaded {load_gguf(folder / 'model.gguf').model.num_params():,} parameters"
    if name.startswith("hf"):
        from model_core.checkpoints.hf import load_hf_folder

        return f"loaded {load_hf_folder(folder).model.num_params():,} parameters"
    from explorer.callbacks.data import _prepare, read_upload

    tokenizer, _, _ = _prepare(read_upload(folder / "words.txt"), "word", 512)
    return f"built a vocabulary of {tokenizer.vocab_size:,} words"


CASES = {f.__name__: f for f in (
    nanogpt_wide, nanogpt_many_params, nanogpt_stride0, nanogpt_compressed, zip_wide, zip_history,
    zip_head_stats_list, zip_tokenizer_panic, zip_tokenizer_precompiled, zip_tokenizer_padding, zip_tokenizer_regex,
    zip_chat_loops, zip_chat_bomb, gguf_wide, gguf_big_tensor, gguf_text_width, hf_wide, text_unique_words)}


def child_main(names: list[str], root: Path, limit_gb: float) -> None:
    """In the child: the address-space limit, the imports, then each case; one JSON line per case."""
    limit = int(limit_gb * 2 ** 30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    warm_up()
    for name in names:
        before = rss_mb(os.getpid())
        start = time.perf_counter()
        try:
            answer, refused = load_case(name, root / name), False
        except BaseException as err:  # noqa: BLE001 - what escapes is the finding
            answer, refused = f"{type(err).__module__}.{type(err).__name__}: {str(err)[:400]}", True
        print(json.dumps({"name": name, "answer": answer, "refused": refused,
                          "seconds": round(time.perf_counter() - start, 3), "rss_before_mb": round(before),
                          "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}),
              flush=True)


def warm_up() -> None:
    """Import and touch what every loader uses (torch's kernels and meta device, tokenizers, Jinja, the GGUF
    reader), as the app has by the time a student uploads, so that a case's time and memory are its own."""
    import torch

    import explorer.callbacks.data  # noqa: F401
    import explorer.callbacks.models  # noqa: F401
    import model_core.checkpoints.gguf  # noqa: F401
    import model_core.checkpoints.hf  # noqa: F401
    import model_core.checkpoints.nanogpt  # noqa: F401
    from model_core import GPT, GPTConfig
    from model_core.checkpoints.load_limits import UPLOAD_LIMITS, check_model_size
    from model_core.data.chat import chat_prompt
    from model_core.data.tokenization import BPETokenizer

    tiny = GPTConfig(vocab_size=11, block_size=8, d_model=8, n_heads=2, n_layers=1)
    GPT(tiny)(torch.zeros(1, 4, dtype=torch.long))
    check_model_size(tiny, UPLOAD_LIMITS)  # the meta device's first use imports torch's decompositions: seconds
    BPETokenizer.train(TEXT, 260).encode(TEXT)
    chat_prompt("{{ messages[0]['content'] }}", "hi")


def load_in_child(names: list[str], root: Path, limit_gb: float = LIMIT_GB, timeout: float = 600) -> dict:
    """Run child_main in a fresh interpreter: -> {name: its JSON line}, plus "returncode" and "stderr_tail"."""
    code = f"from bench.hostile_files import child_main; from pathlib import Path; " \
           f"child_main({names!r}, Path({str(root)!r}), {limit_gb!r})"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "RUST_BACKTRACE": "0"})
    results = {row["name"]: row for row in map(json.loads, filter(None, done.stdout.splitlines()))}
    results["returncode"], results["stderr_tail"] = done.returncode, done.stderr[-2000:]
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"cases to run (default: all): {', '.join(CASES)}")
    parser.add_argument("--out", type=Path, help="where to build the files (default: a temporary folder)")
    parser.add_argument("--limit-gb", type=float, default=LIMIT_GB, help="address-space limit of each child")
    args = parser.parse_args(argv)
    root = args.out or Path(tempfile.mkdtemp(prefix="hostile-files-"))
    print(f"load average {open('/proc/loadavg').read().split()[:3]}; files in {root}")
    for name in args.names or list(CASES):
        CASES[name](root / name)
        size = sum(p.stat().st_size for p in (root / name).iterdir())
        row = load_in_child([name], root, args.limit_gb)
        found = row.get(name) or {"answer": f"the child died (exit {row['returncode']}): {row['stderr_tail'][-300:]}",
                                  "seconds": float("nan"), "peak_rss_mb": float("nan"), "rss_before_mb": float("nan")}
        print(f"{name:26s} {size / 1e3:9.1f} kB  {found['seconds']:6.2f} s  peak RSS {found['peak_rss_mb']:>6} MB "
              f"(+{found['peak_rss_mb'] - found['rss_before_mb']:.0f})  {found['answer'][:150]}")


if __name__ == "__main__":
    main()
