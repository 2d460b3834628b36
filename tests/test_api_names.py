"""The public API names its parameters: scripts call by keyword (`client.predict(prompt=..., layer=1,
api_name="/attention")`), so an input added later with a default breaks no caller. These names are a promise:
change one only on purpose, and say so in the release notes."""
import pytest

from explorer.common.controls import ARCH_FIELDS, OPTIM_FIELDS

ANALYSIS = ("prompt",)
TRAIN = ("corpus", "kind", "bpe_vocab", *ARCH_FIELDS, *OPTIM_FIELDS, "val_split")
PUBLIC = {
    "/data": ("corpus", "upload", "kind", "bpe_vocab", "val_split"),
    "/train_start": TRAIN,
    "/init_model": ("corpus", "kind", "bpe_vocab", *ARCH_FIELDS, "val_split"),
    "/train_pause": (), "/train_resume": (), "/train_stop": (), "/train_status": (),
    "/use_shipped_model": ("name",), "/save_model": (), "/load_model": ("upload",),
    "/attention": (*ANALYSIS, "layer", "head", "query", "drop_unknown"),
    "/snapshot": ("progress",),
    "/heads": (), "/head_examples": ("kind", "layer", "index"), "/head_training": ("layer", "head"),
    "/head_circuits": ("layer", "head", "tokens", "top_k"), "/composition": ("kind",),
    "/grokking_model": (), "/grokking": ("neuron",),
    "/residual": (*ANALYSIS, "layer", "heatmap_mode", "drop_unknown"),
    "/embeddings": (*ANALYSIS, "dims", "layer", "drop_unknown"),
    "/ffn": (*ANALYSIS, "layer", "neuron", "drop_unknown"),
    "/blocks": (*ANALYSIS, "layer", "drop_unknown"),
    "/next_token": (*ANALYSIS, "temperature", "top_k", "top_p", "min_p", "drop_unknown", "chat_format"),
    "/compare": (*ANALYSIS, "settings", "max_new_tokens", "seed", "drop_unknown", "chat_format"),
    "/generate": (*ANALYSIS, "temperature", "top_k", "top_p", "min_p", "max_new_tokens", "seed", "drop_unknown",
                  "chat_format"),
    "/ablate": (*ANALYSIS, "heads", "attn_layers", "mlp_layers", "neurons", "mode", "position", "temperature",
                "max_new_tokens", "seed", "drop_unknown"),
    "/importance_map": ("mode",),
    "/logit_attribution": (*ANALYSIS, "position", "target", "baseline", "drop_unknown"),
    "/activation_patching": ("clean", "corrupted", "kind", "layer", "target", "baseline", "drop_unknown"),
    "/model_b_shipped": ("name",), "/model_b_copy": (), "/model_b_zip": ("upload",),
    "/model_b_nanogpt": ("ckpt_upload", "meta_upload"), "/swap_models": (),
    "/compare_models": (*ANALYSIS, "drop_unknown"),
    "/features": (*ANALYSIS, "order", "position", "drop_unknown"),
    "/feature": (*ANALYSIS, "feature", "position", "drop_unknown"),
    "/steer": (*ANALYSIS, "feature", "strength", "max_new_tokens", "temperature", "seed", "drop_unknown"),
    "/load_sae": ("upload",),
    "/train_features": ("hook", "features", "k", "tokens"),
    "/train_features_pause": (), "/train_features_resume": (), "/train_features_stop": (),
    "/train_features_status": (), "/download_sae": (),
}
OPTIONAL_UPLOADS = {("/data", "upload")}  # every other input but the uploads has a default


@pytest.fixture(scope="module")
def api() -> dict:
    from explorer.ui import build_app
    return build_app().get_api_info()["named_endpoints"]


def test_public_endpoints_and_their_parameter_names_are_pinned(api):
    assert {name: tuple(p["parameter_name"] for p in ep["parameters"]) for name, ep in api.items()} == PUBLIC


def test_no_parameter_is_positional_only(api):
    unnamed = [(name, p["parameter_name"]) for name, ep in api.items() for p in ep["parameters"]
               if p["parameter_name"].startswith("param_")]
    assert not unnamed


def test_every_input_but_an_upload_has_a_default(api):
    """A keyword caller may leave out any setting (it takes the control's initial value)."""
    required = {(name, p["parameter_name"]) for name, ep in api.items() for p in ep["parameters"]
                if not p["parameter_has_default"]}
    uploads = {(name, p["parameter_name"]) for name, ep in api.items() for p in ep["parameters"]
               if "upload" in p["parameter_name"]}
    assert required == uploads - OPTIONAL_UPLOADS
