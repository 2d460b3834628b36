"""nanoGPT checkpoints -> ours (the CLI is `python -m model_core.convert nanogpt CKPT_DIR --out DIR`).

A nanoGPT run directory holds ckpt.pt (a dict with 'model_args' and the 'model' state dict) and, for the
character datasets, meta.pkl (stoi / itos). Every nanoGPT shape is one of ours: GELU MLP of width 4 x n_embd,
LayerNorm with or without bias, learned positions, tied embedding and unembedding, pre-norm blocks. Nothing
is unpickled beyond tensors and plain values: torch.load(weights_only=True) for ckpt.pt, a restricted
unpickler for meta.pkl.

Sizes are bounded before they cost anything: ckpt.pt's zip archive is checked before torch.load (stored
members only, within the file: a compressed member of 1 MB can unpack to 1 GB), and model_args are checked
against the limits on the meta device before any tensor is converted or the model built (a 1 kB ckpt.pt can
ask for 24 layers of width 8192: 19 G parameters)."""
import re
from dataclasses import replace
from pathlib import Path
from typing import Optional

import torch

from model_core.checkpoints.checkpoint import Checkpoint
from model_core.checkpoints.convert_error import ConvertError
from model_core.checkpoints.load_limits import LOCAL_LIMITS, LoadLimits, bounded, model_from_tensors
from model_core.checkpoints.safe_pickle import MAX_PICKLE_BYTES, load_plain_pickle
from model_core.checkpoints.safe_zip import stored_members
from model_core.data.tokenization import CharTokenizer
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT

CKPT_SIZE_FACTOR = 3  # ckpt.pt also holds AdamW's two moments: about three times the weights
COMPILED_PREFIX = "_orig_mod."  # torch.compile'd models save their weights under this prefix
MODEL_ARGS = ("n_layer", "n_head", "n_embd", "block_size", "vocab_size")
MAX_RECORDS = 10_000  # files in ckpt.pt's archive: a 48-layer model with AdamW's moments has ~1,500


def layer_key_map(n_layers: int, bias: bool) -> dict[str, str]:
    """{nanoGPT state-dict key: our key}. The attention's causal-mask buffer ('attn.bias') is not a weight."""
    kinds = ("weight", "bias") if bias else ("weight",)
    pairs = {"transformer.wte.weight": "embed.weight", "transformer.wpe.weight": "pos_embed.weight",
             "lm_head.weight": "unembed.weight"}
    for kind in kinds:
        pairs[f"transformer.ln_f.{kind}"] = f"ln_final.norm.{kind}"
        for i in range(n_layers):
            for theirs, ours in (("ln_1", "ln1.norm"), ("attn.c_attn", "attn.W_qkv"), ("attn.c_proj", "attn.W_o"),
                                 ("ln_2", "ln2.norm"), ("mlp.c_fc", "mlp.W_in"), ("mlp.c_proj", "mlp.W_out")):
                pairs[f"transformer.h.{i}.{theirs}.{kind}"] = f"blocks.{i}.{ours}.{kind}"
    return pairs


def read_nanogpt_checkpoint(path: Path, limits: LoadLimits = LOCAL_LIMITS) -> dict:
    """ckpt.pt as a dict with 'model_args' and 'model', read without running any pickled code and only after
    its archive was found to hold no more than the file's own bytes."""
    if path.stat().st_size > CKPT_SIZE_FACTOR * limits.max_bytes:
        raise ConvertError(f"{path.name} is {path.stat().st_size / 1e6:,.0f} MB, more than this app reads "
                           f"({CKPT_SIZE_FACTOR * limits.max_bytes / 1e6:,.0f} MB).")
    check_archive(path)
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # not a zip, not a pickle, truncated, a refused global: torch raises several types
        named = re.search(r"GLOBAL ([\w.]+)", str(err))  # torch's weights-only unpickler refused a name
        if named:
            raise ConvertError(f"{path.name} holds Python objects other than tensors and plain values (it names "
                               f"{named.group(1)}), so it was refused without running any of it.") from None
        raise ConvertError(f"{path.name} is not a PyTorch checkpoint (torch.load cannot read it); give the "
                           "ckpt.pt that nanoGPT's train.py wrote.") from None
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("model_args"), dict) or \
            not isinstance(ckpt.get("model"), dict):
        raise ConvertError(f"{path.name} is not a nanoGPT checkpoint: nanoGPT saves a dict with 'model_args' "
                           "and 'model' (the weights), and this file lacks them.")
    return ckpt


def check_archive(path: Path) -> None:
    """ConvertError unless ckpt.pt is a zip archive as torch.save writes it (PyTorch 1.6 and later): members
    stored, within the file, its pickle at most MAX_PICKLE_BYTES."""
    try:
        with open(path, "rb") as f:
            members = stored_members(f, MAX_RECORDS)
    except ValueError as err:
        raise ConvertError(f"{path.name} is not a PyTorch checkpoint as torch.save writes it: {err}. Give the "
                           "ckpt.pt that nanoGPT's train.py wrote.") from None
    pickles = [size for name, size in members.items() if name.endswith("data.pkl")]
    if len(pickles) != 1 or pickles[0] > MAX_PICKLE_BYTES:
        raise ConvertError(f"{path.name} does not hold one data.pkl of at most {MAX_PICKLE_BYTES / 1e6:g} MB "
                           "(nanoGPT's is a few kB): it is not a nanoGPT checkpoint.")


def nanogpt_config(model_args: dict, tied: bool = True) -> GPTConfig:
    """Our GPTConfig for nanoGPT's model_args (tied: lm_head is the token embedding, as nanoGPT trains it)."""
    missing = [k for k in MODEL_ARGS if not isinstance(model_args.get(k), int) or isinstance(model_args[k], bool)]
    if missing:
        raise ConvertError(f"model_args lacks whole-number {', '.join(missing)}; this is not a nanoGPT checkpoint.")
    bias = model_args.get("bias", True)  # checkpoints older than the bias option always had biases
    try:
        return GPTConfig(vocab_size=model_args["vocab_size"], block_size=model_args["block_size"],
                         d_model=model_args["n_embd"], n_heads=model_args["n_head"], n_layers=model_args["n_layer"],
                         d_mlp=4 * model_args["n_embd"], activation="gelu", norm="layernorm", norm_placement="pre",
                         positional="learned", tie_weights=tied, bias=bool(bias), dropout=0.0)
    except ValueError as err:
        raise ConvertError(f"model_args do not describe a model this app can build: {err}") from None


def untied(weights: dict, cfg: GPTConfig) -> bool:
    """Whether lm_head is a matrix of its own, not a copy of the embedding (compared only once cfg, tied, was
    found within the limits: both must then have the embedding's shape, at most the parameter limit)."""
    head, wte = weights.get("lm_head.weight"), weights.get("transformer.wte.weight")
    if not isinstance(head, torch.Tensor) or not isinstance(wte, torch.Tensor):
        return False
    if head.shape != wte.shape:
        return True  # then lm_head's shape is refused with the other weights'
    return tuple(head.shape) == (cfg.vocab_size, cfg.d_model) and not torch.equal(head, wte)


def unprefixed(weights: dict) -> dict:
    """The state dict without torch.compile's key prefix."""
    return {k[len(COMPILED_PREFIX):] if isinstance(k, str) and k.startswith(COMPILED_PREFIX) else k: v
            for k, v in weights.items()}


def converted_state_dict(weights: dict, meta_model: GPT) -> dict[str, torch.Tensor]:
    """nanoGPT's weights under our names; ConvertError for a missing, extra or misshapen one. meta_model: the
    model on the meta device (bounded()), whose shapes every weight is checked against before it is read."""
    cfg = meta_model.cfg
    mapping = layer_key_map(cfg.n_layers, cfg.bias)
    expected = meta_model.state_dict()
    out = {}
    for theirs, ours in mapping.items():
        if theirs == "lm_head.weight" and cfg.tie_weights:
            continue
        if theirs not in weights:
            raise ConvertError(f"the weights lack {theirs}: the checkpoint does not match its model_args.")
        tensor = weights[theirs]
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            raise ConvertError(f"{theirs} is not a floating-point tensor.")
        if tensor.shape != expected[ours].shape:  # first: a stride-0 view may claim any shape over one number
            raise ConvertError(f"{theirs} has shape {tuple(tensor.shape)} but model_args imply "
                               f"{tuple(expected[ours].shape)}.")
        if not torch.isfinite(tensor).all():
            raise ConvertError(f"{theirs} contains NaN or infinity; the model is unusable.")
        out[ours] = tensor.float()
    extra = sorted(str(k) for k in weights if k not in mapping and not str(k).endswith("attn.bias"))
    if extra:
        raise ConvertError(f"the weights hold {len(extra)} tensors nanoGPT does not have (such as {extra[0]}): "
                           "this is a modified model this converter does not know.")
    return out


def char_tokenizer(meta_path: Path, vocab_size: int) -> CharTokenizer:
    """The character tokenizer in nanoGPT's meta.pkl (itos: id -> character), which must cover the model's ids."""
    meta = load_plain_pickle(meta_path, meta_path.name)
    itos = meta.get("itos") if isinstance(meta, dict) else None
    if not isinstance(itos, dict) or not isinstance(meta.get("stoi"), dict):
        raise ConvertError(f"{meta_path.name} has no 'stoi' and 'itos' dicts: it is not a character-level meta.pkl.")
    if sorted(itos) != list(range(len(itos))) or not all(isinstance(c, str) and len(c) == 1 for c in itos.values()):
        raise ConvertError(f"{meta_path.name}'s itos must map ids 0, 1, 2, ... to single characters.")
    if len(itos) != vocab_size:
        raise ConvertError(f"{meta_path.name} has {len(itos)} characters but the model has {vocab_size} token ids; "
                           "the meta.pkl belongs to another dataset.")
    return CharTokenizer([itos[i] for i in range(len(itos))])


def convert_nanogpt(ckpt_path: Path, meta_path: Optional[Path], limits: LoadLimits = LOCAL_LIMITS) -> Checkpoint:
    """Our Checkpoint (model in eval mode, character tokenizer) from nanoGPT's ckpt.pt and meta.pkl; pass
    UPLOAD_LIMITS (or the app's) for files from someone else. Every size is checked before it is allocated."""
    ckpt_path = Path(ckpt_path)
    ckpt = read_nanogpt_checkpoint(ckpt_path, limits)
    weights = unprefixed(ckpt["model"])
    cfg = nanogpt_config(ckpt["model_args"])
    meta_model = bounded(cfg, limits)  # before any tensor is compared, converted or built
    if untied(weights, cfg):
        cfg = replace(cfg, tie_weights=False)
        meta_model = bounded(cfg, limits)
    if meta_path is None or not Path(meta_path).is_file():
        raise ConvertError("no meta.pkl found: only nanoGPT's character-level models (such as shakespeare_char) "
                           "can be opened, and their vocabulary is in data/<dataset>/meta.pkl; pass it with --meta.")
    tokenizer = char_tokenizer(Path(meta_path), cfg.vocab_size)
    model = model_from_tensors(cfg, converted_state_dict(weights, meta_model), limits)  # a tied unembed follows embed
    step = ckpt.get("iter_num")
    corpus = f"nanoGPT run {ckpt_path.parent.name}" + (f" (step {step})" if isinstance(step, int) else "")
    return Checkpoint(model, tokenizer, corpus=corpus)
