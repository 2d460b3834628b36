"""Transcoders on disk as circuit-tracer keeps a transcoder set: a folder with config.yaml and one
layer_{i}.safetensors per layer holding W_enc [d_tc, d_model], W_dec [d_tc, d_model], b_enc [d_tc], b_dec [d_model]
and, with a skip connection, W_skip [d_model, d_model] (float32).

config.yaml: model_kind "transcoder_set", feature_input_hook "mlp.hook_in" and feature_output_hook "mlp.hook_out"
(circuit-tracer's names on a TransformerLens model: our blocks.L.ln2.hook_normalized and blocks.L.hook_mlp_out),
activation "topk", k, scan (a name for the set) and
transcoders (the layer files, relative to the folder: circuit-tracer resolves them from its working directory, so
a script that loads ours there makes them absolute first). What only this app reads sits under
`transformer_explorer`. Each layer's feature statistics (model_core.features.dashboard) are kept beside it as
layer_{i}_stats.safetensors. circuit-tracer's own sets open here too when they are TopK or ReLU (a file may carry k
as a tensor, as its newer versions write); JumpReLU sets are refused in a sentence."""
from pathlib import Path
from typing import Union

import torch
import yaml
from safetensors.torch import load_file, save_file

from model_core.checkpoints.fields import size_text
from model_core.features.sae import SAEConfigError
from model_core.features.transcoder import OUTPUT_HOOK, Transcoder, TranscoderConfig

CONFIG = "config.yaml"
OURS = "transformer_explorer"
MAX_CONFIG_BYTES = 100_000
MAX_LAYER_BYTES = 200_000_000


class TranscoderFileError(ValueError):
    """A transcoder folder that cannot be read; the message says why."""


def layer_file(layer: int) -> str:
    return f"layer_{layer}.safetensors"


def stats_file(layer: int) -> str:
    return f"layer_{layer}_stats.safetensors"


# circuit-tracer's names for the FFN's input and output on a TransformerLens model (its ReplacementMLP's hooks):
# TransformerLens calls the norm's output before its weight and bias ln2.hook_normalized, so that name would read
# another vector there; ours (INPUT_HOOK, after the weight and bias) is the FFN's input, which it calls mlp.hook_in.
CT_INPUT_HOOK, CT_OUTPUT_HOOK = "mlp.hook_in", "mlp.hook_out"


def set_config(transcoders: list[Transcoder], scan: str, extra: dict) -> dict:
    """config.yaml's content for the set."""
    return {"model_kind": "transcoder_set", "feature_input_hook": CT_INPUT_HOOK, "feature_output_hook": CT_OUTPUT_HOOK,
            "activation": "topk", "k": transcoders[0].cfg.k, "scan": scan,
            "transcoders": [layer_file(tc.cfg.layer) for tc in transcoders], OURS: extra}


def save_transcoders(transcoders: list[Transcoder], folder: Union[str, Path], scan: str, extra: dict) -> Path:
    """Write the set's folder (created if needed); returns it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for tc in transcoders:
        tensors = {name: p.detach().float().contiguous() for name, p in tc.named_parameters()}
        save_file(tensors, str(folder / layer_file(tc.cfg.layer)))
    config = set_config(transcoders, scan, extra)
    (folder / CONFIG).write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def read_config(folder: Path) -> dict:
    path = folder / CONFIG
    if not path.is_file():
        raise TranscoderFileError(f"{folder} has no {CONFIG}: a transcoder set is a folder with config.yaml and "
                                  "layer_0.safetensors, layer_1.safetensors, ...")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise TranscoderFileError(f"{path} is {size_text(path.stat().st_size)}; a transcoder config is a few lines.")
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise TranscoderFileError(f"{path} is not readable YAML ({type(err).__name__}).") from None
    if not isinstance(config, dict) or config.get("model_kind") != "transcoder_set":
        raise TranscoderFileError(f"{path} does not describe a per-layer transcoder set (model_kind: transcoder_set); "
                                  "cross-layer transcoders are not supported.")
    if config.get("feature_input_hook") != CT_INPUT_HOOK or config.get("feature_output_hook") not in (CT_OUTPUT_HOOK,
                                                                                                   OUTPUT_HOOK):
        raise TranscoderFileError(f"{path} reads {config.get('feature_input_hook')!r} and writes "
                                  f"{config.get('feature_output_hook')!r}; this app's transcoders read the FFN's input "
                                  f"({CT_INPUT_HOOK}) and write its output ({CT_OUTPUT_HOOK} or {OUTPUT_HOOK}).")
    return config


def _layer_tensors(path: Path) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise TranscoderFileError(f"{path} is missing: config.yaml names it.")
    if path.stat().st_size > MAX_LAYER_BYTES:
        raise TranscoderFileError(f"{path} is {size_text(path.stat().st_size)}, more than the "
                                  f"{size_text(MAX_LAYER_BYTES)} a transcoder layer may have here.")
    try:
        return load_file(str(path))
    except Exception as err:  # safetensors' own errors name no fix
        raise TranscoderFileError(f"{path} is not a readable safetensors file ({type(err).__name__}).") from None


def transcoder_from_tensors(tensors: dict, layer: int, k, source: str) -> Transcoder:
    """A transcoder with these weights; TranscoderFileError names a missing or misshapen one."""
    if "activation_function.threshold" in tensors:
        raise TranscoderFileError(f"{source} is a JumpReLU transcoder; this app reads TopK transcoders.")
    missing = [name for name in ("W_enc", "W_dec", "b_enc", "b_dec") if name not in tensors]
    if missing:
        raise TranscoderFileError(f"{source} has no {', '.join(missing)}.")
    d_tc, d_model = tensors["W_enc"].shape if tensors["W_enc"].ndim == 2 else (0, 0)
    k = int(tensors["k"]) if k is None and "k" in tensors else k
    try:
        tc = Transcoder(TranscoderConfig(int(d_model), int(d_tc), k, layer, skip="W_skip" in tensors))
    except SAEConfigError as err:
        raise TranscoderFileError(f"{source}: {err}") from None
    for name, p in tc.named_parameters():
        if tuple(tensors[name].shape) != tuple(p.shape):
            raise TranscoderFileError(f"{source}: {name} has shape {list(tensors[name].shape)}, but W_enc's "
                                      f"{[d_tc, d_model]} needs {list(p.shape)}.")
        with torch.no_grad():
            p.copy_(tensors[name].float())
    return tc.requires_grad_(False).eval()


def load_transcoders(folder: Union[str, Path]) -> tuple[list[Transcoder], dict]:
    """(one transcoder per layer, config.yaml's content) from a folder written by us or by circuit-tracer."""
    folder = Path(folder)
    config = read_config(folder)
    if config.get("activation", "topk") != "topk":
        raise TranscoderFileError(f"{folder / CONFIG} says activation {config.get('activation')!r}; this app reads "
                                  "TopK transcoders.")
    names = config.get("transcoders") or sorted((p.name for p in folder.glob("layer_*.safetensors")
                                                 if not p.name.endswith("_stats.safetensors")),
                                                key=lambda n: int(n.split("_")[1].split(".")[0]))
    if not names or any(not isinstance(n, str) or n.startswith("hf://") for n in names):
        raise TranscoderFileError(f"{folder / CONFIG} must list local layer files (no hf:// downloads here).")
    transcoders = [transcoder_from_tensors(_layer_tensors(folder / Path(name).name), layer, config.get("k"),
                                           str(folder / Path(name).name)) for layer, name in enumerate(names)]
    if len({(tc.cfg.d_model, tc.cfg.d_transcoder) for tc in transcoders}) != 1:
        raise TranscoderFileError(f"the layers in {folder} differ in width; a set has one shape.")
    return transcoders, config
