"""SAEs on disk in SAELens's format: a folder (or a .zip of one) holding cfg.json and sae_weights.safetensors
with W_enc [d_in, d_sae], b_enc [d_sae], W_dec [d_sae, d_in], b_dec [d_in] (float32).

cfg.json follows SAELens 6 (`SAE.load_from_disk` opens our folders): architecture ("topk" or "standard"), d_in,
d_sae, dtype, device, apply_b_dec_to_input, normalize_activations, reshape_activations, k and
rescale_acts_by_decoder_norm for TopK, and metadata {sae_lens_version, model_name, hook_name, hook_head_index,
context_size, prepend_bos, dataset_path, ...}; what only this app reads sits in metadata["transformer_explorer"].
We read SAELens's own files too, 6.x and the older flat layout (hook_point / hook_name at the top level,
activation_fn "topk" with activation_fn_kwargs.k). Untrusted files are bounded before anything is allocated."""
import io
import json
from pathlib import Path
from typing import Union

import torch
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save as safetensors_bytes

from model_core.checkpoints.fields import size_text, strict_json
from model_core.checkpoints.safe_zip import directory_size, read_members
from model_core.checkpoints.safetensors_header import check_header, header_specs
from model_core.features.sae import SAEConfig, SAEConfigError, SparseAutoencoder, sae_from_tensors

CFG, WEIGHTS = "cfg.json", "sae_weights.safetensors"
FORMAT_VERSION = "6.0.0"  # the SAELens cfg.json layout we write (SAELens reads it as its 6.x format)
OURS = "transformer_explorer"  # metadata key for what only this app reads
MAX_CFG_BYTES = 1_000_000
MAX_FEATURES = 1 << 17  # d_sae
MAX_WIDTH = 16_384  # d_in
MAX_SAE_BYTES = 200_000_000  # weights of an uploaded SAE (a 576 x 16k SAE is 75 MB)


class SAEFileError(ValueError):
    """An SAE folder or file that cannot be read; the message says why and what to do."""


def saelens_config(sae: SparseAutoencoder) -> dict:
    """cfg.json's content for sae."""
    cfg = sae.cfg
    out = {"architecture": cfg.architecture, "d_in": cfg.d_in, "d_sae": cfg.d_sae, "dtype": "float32",
           "device": "cpu", "apply_b_dec_to_input": cfg.apply_b_dec_to_input, "normalize_activations": "none",
           "reshape_activations": "none"}
    if cfg.architecture == "topk":
        out.update(k=cfg.k, rescale_acts_by_decoder_norm=False)
    out["metadata"] = {"sae_lens_version": FORMAT_VERSION, "sae_lens_training_version": None,
                       "model_name": cfg.model_name, "hook_name": cfg.hook_name, "hook_head_index": None,
                       "context_size": cfg.extra.get("context_size"), "prepend_bos": False,
                       "dataset_path": cfg.extra.get("dataset_path"), OURS: cfg.extra}
    return out


def sae_files(sae: SparseAutoencoder) -> dict[str, bytes]:
    """{file name: bytes} of the SAE's folder."""
    tensors = {name: p.detach().float().contiguous() for name, p in sae.named_parameters()}
    return {CFG: json.dumps(saelens_config(sae), indent=1).encode(), WEIGHTS: safetensors_bytes(tensors)}


def save_sae(sae: SparseAutoencoder, path: Union[str, Path]) -> Path:
    """Write the SAE's folder (created if needed); returns it."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    for name, data in sae_files(sae).items():
        (path / name).write_bytes(data)
    return path


def load_sae(path: Union[str, Path, bytes], max_bytes: int = MAX_SAE_BYTES) -> SparseAutoencoder:
    """An SAE from a folder, a .zip of one (a path or its bytes); SAEFileError says what is wrong."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        return _from_zip(io.BytesIO(bytes(path)), "the uploaded file", max_bytes)
    path = Path(path)
    if path.is_file():
        with open(path, "rb") as f:
            return _from_zip(f, str(path), max_bytes)
    if not path.is_dir():
        raise SAEFileError(f"no SAE at {str(path)!r}: give the folder that holds {CFG} and {WEIGHTS}.")
    files = {}
    for name, cap in ((CFG, MAX_CFG_BYTES), (WEIGHTS, max_bytes)):
        if (path / name).is_file():
            with open(path / name, "rb") as f:
                files[name] = f.read(cap + 1)
    return sae_from_files(files, str(path), max_bytes)


def _from_zip(f, where: str, max_bytes: int) -> SparseAutoencoder:
    if directory_size(f) is None:
        raise SAEFileError(f"{where} is neither an SAE folder nor a .zip of one ({CFG} + {WEIGHTS}).")
    try:
        files = read_members(f, (CFG, WEIGHTS), max_bytes + MAX_CFG_BYTES, {CFG: MAX_CFG_BYTES, WEIGHTS: max_bytes})
    except ValueError as err:
        raise SAEFileError(f"{where}: {err}") from None
    return sae_from_files(files, where, max_bytes)


def sae_from_files(files: dict[str, bytes], where: str, max_bytes: int = MAX_SAE_BYTES) -> SparseAutoencoder:
    """Check both files, then build the SAE: every check runs before the weights are allocated."""
    for name in (CFG, WEIGHTS):
        if name not in files:
            raise SAEFileError(f"{where} has no {name}: an SAE folder holds {CFG} and {WEIGHTS}.")
    if len(files[WEIGHTS]) > max_bytes:
        raise SAEFileError(f"{where}: {WEIGHTS} is more than {size_text(max_bytes)}, the limit for an SAE here.")
    try:
        cfg = config_from_saelens(strict_json(files[CFG], CFG, MAX_CFG_BYTES))
        expected = {"W_enc": (cfg.d_in, cfg.d_sae), "b_enc": (cfg.d_sae,), "W_dec": (cfg.d_sae, cfg.d_in),
                    "b_dec": (cfg.d_in,)}
        extra = _extra_tensors(files[WEIGHTS])
        check_header(files[WEIGHTS], {**{k: (s, torch.float32) for k, s in expected.items()}, **extra})
        tensors = load_safetensors_bytes(bytes(files[WEIGHTS]))
    except SAEConfigError as err:
        raise SAEFileError(f"{where}: {err}") from None
    except ValueError as err:
        raise SAEFileError(f"{where}: {str(err).replace('model.safetensors', WEIGHTS)}") from None
    for name in expected:
        if not torch.isfinite(tensors[name]).all():
            raise SAEFileError(f"{where}: {name} contains NaN or infinity; the SAE is unusable.")
    sae = sae_from_tensors(cfg, tensors, where)
    return _fold_decoder_norms(sae) if cfg.extra.pop("rescale_acts_by_decoder_norm", False) else sae


def _extra_tensors(data: bytes) -> dict:
    """Tensors SAELens may add that we accept and ignore (an all-ones finetuning scale)."""
    specs = header_specs(data)
    return {name: (specs[name][1], torch.float32) for name in ("scaling_factor", "finetuning_scaling_factor")
            if name in specs}


def _number(d: dict, key: str, maximum: int) -> int:
    value = d.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= maximum:
        raise SAEConfigError(f"{CFG}: {key} must be a whole number from 1 to {maximum:,}, got {str(value)[:40]!r}.")
    return value


def config_from_saelens(d) -> SAEConfig:
    """SAEConfig from a SAELens cfg.json (6.x, or the older flat layout); SAEConfigError if we cannot run it."""
    if not isinstance(d, dict):
        raise SAEConfigError(f"{CFG} must hold a JSON object.")
    meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
    architecture = d.get("architecture")
    kwargs = d.get("activation_fn_kwargs") if isinstance(d.get("activation_fn_kwargs"), dict) else {}
    if architecture is None:  # before SAELens 6
        architecture = "topk" if d.get("activation_fn", d.get("activation_fn_str")) == "topk" else "standard"
    if architecture not in ("topk", "standard"):
        raise SAEConfigError(f"this app runs TopK and standard (ReLU) SAEs; this one is {str(architecture)[:40]!r}.")
    if d.get("normalize_activations", "none") not in ("none", None, False):
        raise SAEConfigError(f"normalize_activations is {str(d.get('normalize_activations'))[:40]!r}: fold the "
                             "normalisation into the weights first (SAELens does when it saves an inference SAE).")
    if d.get("reshape_activations", "none") not in ("none", None) or d.get("hook_head_index", meta.get("hook_head_index")) is not None:
        raise SAEConfigError("this SAE reads single attention heads (hook_z): this app's SAEs read whole "
                             "[batch, pos, width] activations.")
    hook = meta.get("hook_name") or d.get("hook_name") or d.get("hook_point") or ""
    d_in, d_sae = _number(d, "d_in", MAX_WIDTH), _number(d, "d_sae", MAX_FEATURES)
    if d_in * d_sae * 8 > MAX_SAE_BYTES:
        raise SAEConfigError(f"{d_in:,} x {d_sae:,} is too large an SAE for this app (at most "
                             f"{size_text(MAX_SAE_BYTES)} of weights).")
    k = d.get("k", kwargs.get("k", 1)) if architecture == "topk" else 1
    if architecture == "topk" and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= d_sae):
        raise SAEConfigError(f"{CFG}: k must be a whole number from 1 to d_sae, got {str(k)[:40]!r}.")
    ours = meta.get(OURS) if isinstance(meta.get(OURS), dict) else {}
    extra = {**ours, "rescale_acts_by_decoder_norm": bool(d.get("rescale_acts_by_decoder_norm", False))}
    return SAEConfig(d_in=d_in, d_sae=d_sae, architecture=architecture, k=k, hook_name=str(hook)[:200],
                     model_name=str(meta.get("model_name") or d.get("model_name") or "")[:200],
                     apply_b_dec_to_input=bool(d.get("apply_b_dec_to_input", True)), extra=extra).validate()


@torch.no_grad()
def _fold_decoder_norms(sae: SparseAutoencoder) -> SparseAutoencoder:
    """A TopK SAE that ranks pre-activations times its decoder norms -> the same function with unit rows:
    pre and b_enc times the norms, W_dec divided by them."""
    norms = sae.W_dec.norm(dim=-1).clamp_min(1e-8)  # [d_sae]
    sae.W_enc.mul_(norms)
    sae.b_enc.mul_(norms)
    sae.W_dec.div_(norms[:, None])
    return sae
