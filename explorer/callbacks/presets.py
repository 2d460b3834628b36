"""The Train tab's preset picker: a preset's architecture, optimiser and (for the seed presets) data choices."""
import gradio as gr

from explorer.callbacks.model_size import count_params, gpu_explanation
from explorer.callbacks.train import DEFAULT_CORPUS, model_config, start_vocab_size
from explorer.callbacks.train_fields import FIELD_RULES
from explorer.common.controls import ARCH_FIELDS, CONTROL_NAMES, OPTIM_FIELDS, mlp_ratio_of
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.state.session import Session
from model_core.data.tokenization import BPE_DEFAULT_VOCAB
from model_core.training.presets import PRESETS, get_preset

DATA_FIELDS = ("corpus", "kind", "bpe_vocab", "val_split")  # the Data-tab controls a preset may set


def preset_control_values(name: str) -> dict:
    """{control name: value} for the ARCH_FIELDS, OPTIM_FIELDS and the data fields the preset names."""
    if name not in PRESETS:
        raise UserError(f"Pick a preset: {', '.join(PRESETS)}.")
    preset = get_preset(name)
    model, train = preset.model_config(vocab_size=2).to_dict(), preset.train_config(device="cpu").to_dict()
    model["mlp_ratio"] = mlp_ratio_of(model)
    values = {k: model[k] for k in ARCH_FIELDS} | {k: train[k] for k in OPTIM_FIELDS}
    if preset.data.get("task"):  # a full-batch task trains on every example whatever the control says
        values["batch_size"] = min(values["batch_size"], FIELD_RULES["batch_size"][3])
    data = preset.data
    if data:
        values |= {"corpus": data["corpus"], "kind": data.get("tokenizer", "char"),
                   "val_split": "none" if data.get("val_fraction") == 0 else "10%"}
        if "bpe_vocab" in data:
            values["bpe_vocab"] = data["bpe_vocab"]
    return values


def preset_note(session: Session, name: str, corpus: str = DEFAULT_CORPUS, kind: str = "char",
                bpe_vocab=BPE_DEFAULT_VOCAB) -> str:
    """Markdown: what the preset is, and for one over this server's limit, why it needs a GPU. Its size is
    counted for the data Start would use: the preset's own, else the Data tab's choices (corpus, kind, bpe_vocab)."""
    preset = get_preset(name)
    text = f"**{name}**: {preset.description}"
    values = {"corpus": corpus, "kind": kind, "bpe_vocab": bpe_vocab, **preset_control_values(name)}
    try:
        vocab_size = start_vocab_size(session, values["corpus"], values["kind"], values["bpe_vocab"])
    except ValueError:  # data Start would refuse: the size line under the controls says why
        return text
    n = count_params(model_config(session, {k: values[k] for k in ARCH_FIELDS}, vocab_size))
    if n > LIMITS.max_params:
        train = preset.train_config()
        text += (f"\n\n**{n:,} parameters**, over this server's limit of {LIMITS.max_params:,}: "
                 + gpu_explanation(n, train.batch_size, preset.model["block_size"], train.max_steps))
    return text


def apply_preset(session: Session, name: str):
    """-> one value (or no change) per ARCH_FIELDS, OPTIM_FIELDS and DATA_FIELDS control."""
    values = preset_control_values(name)
    return tuple(values[f] if f in values else gr.update() for f in (*ARCH_FIELDS, *OPTIM_FIELDS, *DATA_FIELDS))


def preset_settings(name: str) -> dict:
    """{link / lesson parameter name: value} of the controls preset name fills."""
    return {CONTROL_NAMES.get(field, field): value for field, value in preset_control_values(name).items()}
