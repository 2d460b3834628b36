"""Hugging Face model folders -> ours (the CLI is `python -m model_core.convert hf DIR --out OUT`).

A folder holds config.json (its model_type names the family: gpt2, llama, qwen2, gpt_neox; see hf_families),
the weights as model.safetensors (or shards listed in model.safetensors.index.json) and tokenizer.json.
Nothing is unpickled: a pytorch_model.bin is refused. Every size is bounded before anything is allocated: the
config against LoadLimits (the model built on the meta device), then the safetensors headers against the
tensors the config implies (the conversion runs once on meta tensors, shapes only, before any weight is read)."""
import math
import mmap
from pathlib import Path
from typing import Mapping, Optional

import torch

from model_core.checkpoints.checkpoint import Checkpoint
from model_core.checkpoints.convert_error import ConvertError
from model_core.checkpoints.fields import size_text, strict_json
from model_core.checkpoints.hf_families import BUFFERS, converted_state_dict, hf_gpt_config
from model_core.checkpoints.load_limits import LOCAL_LIMITS, LoadLimits, bounded, model_from_tensors
from model_core.checkpoints.safetensors_header import FLOAT_DTYPES, header_specs
from model_core.data.chat import MAX_TEMPLATE_CHARS, checked_template
from model_core.data.native_errors import native_call, refused_by_library
from model_core.data.tokenization import BPETokenizer, TokenizerError, hf_tokenizer
from model_core.model.gpt import GPT

MAX_CONFIG_BYTES = 16_000_000  # config.json, tokenizer_config.json, the shard index: a few kB to a few MB
MAX_TOKENIZER_BYTES = 64_000_000  # as much as a checkpoint's tokenizer may hold (fields.check_tokenizer)
WEIGHTS, INDEX = "model.safetensors", "model.safetensors.index.json"


def gpt_from_hf(config: dict, tensors: Mapping[str, torch.Tensor], block_size: Optional[int] = None, *,
                limits: LoadLimits = LOCAL_LIMITS) -> GPT:
    """Our GPT (eval mode) from a parsed config.json and its tensors by Hugging Face name (float32).
    block_size: the context to build, by default the model's own, at most 1024."""
    cfg = hf_gpt_config(config, block_size)
    bounded(cfg, limits, context_flag=True)
    state = converted_state_dict(config, cfg, tensors)
    return model_from_tensors(cfg, state, limits)  # no random init of weights replaced at once (seconds at 135M)


# ---------------------------------------------------------------- the folder

def read_json(path: Path, max_bytes: int = MAX_CONFIG_BYTES):
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)  # a file over the cap is refused by strict_json, never read in full
    try:
        return strict_json(data, path.name, max_bytes)
    except ValueError as err:
        raise ConvertError(str(err).replace("save the model again", "download it again")) from None


def read_config(folder: Path) -> dict:
    if not folder.is_dir():
        raise ConvertError(f"{folder} is not a folder: give the Hugging Face model folder (config.json, "
                           "model.safetensors, tokenizer.json).")
    if not (folder / "config.json").is_file():
        raise ConvertError(f"no config.json in {folder}: give a Hugging Face model folder, as save_pretrained "
                           "writes it (config.json, model.safetensors, tokenizer.json).")
    return read_json(folder / "config.json")


def weight_files(folder: Path) -> list[Path]:
    """model.safetensors, or the shards model.safetensors.index.json lists (each beside it)."""
    if (folder / WEIGHTS).is_file():
        return [folder / WEIGHTS]
    if (folder / INDEX).is_file():
        index = read_json(folder / INDEX)
        shards = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(shards, dict) or not all(isinstance(s, str) for s in shards.values()):
            raise ConvertError(f"{INDEX} has no weight_map of tensor name -> file: download it again.")
        names = sorted(set(shards.values()))
        for name in names:
            if Path(name).name != name or not name.endswith(".safetensors") or not (folder / name).is_file():
                raise ConvertError(f"{INDEX} lists {name[:80]!r}, which is not a .safetensors file in {folder}: "
                                   "download the missing shard.")
        return [folder / name for name in names]
    if any(folder.glob("*.bin")) or any(folder.glob("*.pt")) or any(folder.glob("*.pth")):
        raise ConvertError(f"{folder} holds its weights as PyTorch pickles (pytorch_model.bin), which this app "
                           "never opens: unpickling can run code. Re-save them as safetensors where transformers is "
                           "installed: AutoModelForCausalLM.from_pretrained(DIR).save_pretrained(DIR, "
                           "safe_serialization=True), or download the model's model.safetensors.")
    raise ConvertError(f"no {WEIGHTS} (nor {INDEX}) in {folder}: download the model's weights into it.")


def header_tensors(path: Path) -> dict[str, torch.Tensor]:
    """{name: meta tensor of the stored shape} from a safetensors file's header, without reading the tensors;
    ConvertError for a damaged file or one that stores anything but floating-point numbers."""
    if path.stat().st_size < 8:
        raise ConvertError(f"{path.name} is damaged or truncated: download it again.")
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            specs = header_specs(data)  # reads only the header bytes of the mapped file
    except ValueError as err:
        raise ConvertError(f"{path.name}: {str(err).replace('save the model again', 'download it again')}") from None
    tensors = {}
    for name, (dtype, shape, begin, end) in specs.items():
        if BUFFERS.search(name):
            continue
        if dtype not in FLOAT_DTYPES:
            raise ConvertError(f"{name[:80]} is stored as {dtype}, not as floating-point numbers: quantized "
                               "weights cannot be converted; use the model's float16, bfloat16 or float32 files.")
        if end - begin != math.prod(shape) * FLOAT_DTYPES[dtype]:
            raise ConvertError(f"{path.name} is damaged ({name[:80]} has {end - begin:,} bytes for shape {shape}): "
                               "download it again.")
        tensors[name] = torch.empty(shape, dtype=torch.float32, device="meta")
    return tensors


def folder_headers(files: list[Path], limits: LoadLimits) -> dict[Path, dict[str, torch.Tensor]]:
    """Each weight file's meta tensors; ConvertError if the files are over the limit or share a name."""
    total = sum(f.stat().st_size for f in files)
    if total > limits.max_bytes:
        raise ConvertError(f"the weight files hold {size_text(total)}, more than this app's limit of "
                           f"{size_text(limits.max_bytes)}: the model is too large for this app.")
    headers, seen = {}, set()
    for path in files:
        headers[path] = header_tensors(path)
        twice = seen & headers[path].keys()
        if twice:
            raise ConvertError(f"{sorted(twice)[0][:80]} is in two weight files: the shards are mixed up.")
        seen |= headers[path].keys()
    return headers


def read_tensors(headers: dict[Path, dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Every tensor the headers name, as float32 (the headers were checked already)."""
    from safetensors import safe_open

    tensors = {}
    for path, names in headers.items():
        try:
            with safe_open(path, framework="pt") as f:
                for name in names:
                    tensors[name] = f.get_tensor(name).float()
        except BaseException as err:  # noqa: BLE001 - safetensors raises its own types (and may panic) on damaged files
            if not refused_by_library(err):
                raise
            raise ConvertError(f"{path.name} is damaged ({str(err)[:120]}): download it again.") from None
    return tensors


def chat_template(folder: Path) -> Optional[str]:
    """The chat template from tokenizer_config.json, or chat_template.jinja (where transformers 5 writes it)."""
    template = None
    if (folder / "tokenizer_config.json").is_file():
        tokenizer_config = read_json(folder / "tokenizer_config.json")
        template = tokenizer_config.get("chat_template") if isinstance(tokenizer_config, dict) else None
        if isinstance(template, list):  # several named templates: the default one
            template = next((t.get("template") for t in template if isinstance(t, dict)
                             and t.get("name") == "default"), None)
    if template is None and (folder / "chat_template.jinja").is_file():
        with open(folder / "chat_template.jinja", "rb") as f:
            template = f.read(4 * MAX_TEMPLATE_CHARS + 1).decode("utf-8", errors="replace")
    try:
        return checked_template(template)
    except ValueError as err:
        raise ConvertError(f"{err} (chat_template in tokenizer_config.json)") from None


def read_tokenizer(folder: Path, vocab_size: int) -> BPETokenizer:
    """tokenizer.json with placeholder tokens up to the model's vocab_size (models round their embedding up:
    Pythia has 50,304 rows for 50,277 tokens), so every id the model can produce has a label. The file is
    checked before the `tokenizers` library reads it (model_core.data.tokenizer_json)."""
    from tokenizers import AddedToken

    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ConvertError(f"no tokenizer.json in {folder}: the app needs the model's tokenizer to turn text into "
                           "token ids; download it (or tokenizer.save_pretrained(DIR) writes it).")
    with open(path, "rb") as f:
        data = f.read(MAX_TOKENIZER_BYTES + 1)
    if len(data) > MAX_TOKENIZER_BYTES:
        raise ConvertError(f"tokenizer.json is more than {size_text(MAX_TOKENIZER_BYTES)}, the limit for a tokenizer.")
    try:
        hf = hf_tokenizer(data.decode("utf-8"), vocab_size)
        n = hf.get_vocab_size()
        if n > vocab_size:
            raise ConvertError(f"tokenizer.json has {n:,} tokens but the model has {vocab_size:,} token embeddings: "
                               "they belong to different models.")
        with native_call("adding placeholder tokens to the tokenizer", ConvertError):
            hf.add_special_tokens([AddedToken(f"<|unused_{i}|>", special=True) for i in range(n, vocab_size)])
            gapless = hf.get_vocab_size() == vocab_size and max(hf.get_vocab().values()) == vocab_size - 1
    except (TokenizerError, UnicodeDecodeError) as err:
        raise ConvertError(f"tokenizer.json cannot be read ({str(err)[:160]}): download it again.") from None
    except ConvertError:
        raise
    except Exception as err:  # the library's own errors on a tokenizer it cannot build
        raise ConvertError(f"tokenizer.json cannot be read ({str(err)[:120]}): download it again.") from None
    if not gapless:
        raise ConvertError("tokenizer.json's token ids are not numbered 0, 1, 2, ... without gaps; it is damaged.")
    return BPETokenizer(hf, chat_template(folder))


def load_hf_folder(path, block_size: Optional[int] = None, *, limits: LoadLimits = LOCAL_LIMITS) -> Checkpoint:
    """Our Checkpoint (model in eval mode, BPE tokenizer) from a Hugging Face model folder. Everything is checked
    before a weight is read: config.json against limits, then the safetensors headers against config.json."""
    folder = Path(path)
    config = read_config(folder)
    cfg = hf_gpt_config(config, block_size)
    bounded(cfg, limits, context_flag=True)
    headers = folder_headers(weight_files(folder), limits)
    converted_state_dict(config, cfg, {n: t for names in headers.values() for n, t in names.items()})  # shapes
    tokenizer = read_tokenizer(folder, cfg.vocab_size)
    model = gpt_from_hf(config, read_tensors(headers), cfg.block_size, limits=limits)
    return Checkpoint(model, tokenizer, corpus=f"Hugging Face {config['model_type']} model {folder.resolve().name}")
