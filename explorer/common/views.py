"""The views: one entry per tab of the app, in tab order, and everything outside the tab that names it.

Read by the page (explorer.ui: tab order, labels, ids, which tabs are drawn when selected, and a check that each
tab registers the link parameters declared here), the link parameters (explorer.teaching.view_params: `?tab=`),
the lesson claims (explorer.teaching.lesson_claims: which quantities need no model; explorer.lesson_check measures
them) and the public API's test (tests/test_api_names.py). A view's builder is `build_<id>_tab` in
`explorer/tabs/<id>.py`: it takes the page's shared components by parameter name (prompt, drop, model_info,
opening, resumed). Adding a view: docs/architecture.md, "Adding a view"."""
from dataclasses import dataclass, field

from explorer.common.controls import ARCH_FIELDS, CONTROL_NAMES, OPTIM_FIELDS


@dataclass(frozen=True)
class ViewSpec:
    id: str  # the tab's id, as links and lesson steps name it (?tab=<id>)
    label: str  # the tab's label
    # an analysis view: drawn when its tab is selected, when a link opens it and when the prompt is submitted; its
    # builder returns ((view, inputs, outputs), {link parameter: control})
    draws: bool = False
    params: tuple = ()  # link and lesson parameters the tab's controls take (a name may sit in several tabs)
    # public endpoints the tab publishes -> their parameter names. A promise to scripts that call by keyword
    # (client.predict(prompt=..., api_name="/attention")): change one only on purpose, and say so in the release notes.
    api: dict = field(default_factory=dict)
    quantities: tuple = ()  # what lesson claims measure on it (keys of lesson_claims.QUANTITIES)
    needs_model: bool = True  # False: its quantities are measured from the step's controls alone, with no model


def _named(fields) -> tuple:
    """Link parameter names of Data and Train fields."""
    return tuple(CONTROL_NAMES.get(f, f) for f in fields)


TRAIN = ("corpus", "kind", "bpe_vocab", *ARCH_FIELDS, *OPTIM_FIELDS, "val_split")  # /train_start's parameters
SAMPLING = ("temperature", "top_k", "top_p", "min_p")  # the Sampling tab's filters

VIEWS = (
    ViewSpec("data", "Data", params=_named(("corpus", "kind", "bpe_vocab", "val_split")),
             api={"/data": ("corpus", "upload", "kind", "bpe_vocab", "val_split")},
             quantities=("vocabulary size", "text tokens", "training examples"), needs_model=False),
    ViewSpec("train", "Train", params=("preset", *_named((*ARCH_FIELDS, *OPTIM_FIELDS))),
             api={"/train_start": TRAIN, "/init_model": ("corpus", "kind", "bpe_vocab", *ARCH_FIELDS, "val_split"),
                  "/train_pause": (), "/train_resume": (), "/train_stop": (), "/train_status": (),
                  "/use_shipped_model": ("name",), "/save_model": (), "/load_model": ("upload",)},
             quantities=("parameters", "untrained loss"), needs_model=False),
    ViewSpec("attention", "Attention", draws=True, params=("layer", "head", "query"),
             api={"/attention": ("prompt", "layer", "head", "query", "drop_unknown"), "/snapshot": ("progress",)},
             quantities=("role", "role score", "heads with role", "attention", "brightest column",
                         "first-token share")),
    ViewSpec("heads", "Heads", draws=True, params=("layer", "head"),
             api={"/heads": (), "/head_examples": ("kind", "layer", "index"), "/head_training": ("layer", "head"),
                  "/head_circuits": ("layer", "head", "tokens", "top_k"), "/composition": ("kind",)},
             quantities=("induction score",)),
    ViewSpec("residual", "Residual stream", draws=True, params=("layer",),
             api={"/residual": ("prompt", "layer", "heatmap_mode", "drop_unknown")}),
    ViewSpec("embeddings", "Embeddings", draws=True,
             api={"/embeddings": ("prompt", "dims", "layer", "drop_unknown")}),
    ViewSpec("ffn", "FFN", draws=True, params=("layer", "neuron"),
             api={"/ffn": ("prompt", "layer", "neuron", "drop_unknown")}, quantities=("neuron activation",)),
    ViewSpec("features", "Features", draws=True,
             params=("query", "feature", "feature_order", "strength", "steer_tokens", "steer_temperature",
                     "steer_seed"),
             api={"/features": ("prompt", "order", "position", "drop_unknown"),
                  "/feature": ("prompt", "feature", "position", "drop_unknown"),
                  "/steer": ("prompt", "feature", "strength", "max_new_tokens", "temperature", "seed",
                             "drop_unknown"), "/load_sae": ("upload",),
                  "/train_features": ("hook", "features", "k", "tokens"), "/train_features_pause": (),
                  "/train_features_resume": (), "/train_features_stop": (), "/train_features_status": (),
                  "/download_sae": ()},
             quantities=("feature activation", "strongest feature", "active features", "density", "feature top token",
                         "promoted token", "top neuron", "neuron correlation", "steered text", "unsteered text",
                         "steered count", "unsteered count", "steered count over seeds", "unsteered count over seeds",
                         "contexts right after", "contexts with after")),
    ViewSpec("graph", "Graph", draws=True, params=("node_threshold",),
             api={"/attribution_graph": ("prompt", "node_threshold", "drop_unknown"),
                  "/graph_node": ("prompt", "node", "drop_unknown"),
                  "/graph_intervene": ("prompt", "features", "mode", "value", "drop_unknown"),
                  "/qk_attribution": ("prompt", "layer", "head", "query_position", "key_position", "drop_unknown"),
                  "/graph_json": ("prompt", "node_threshold", "drop_unknown"),
                  "/train_transcoders": ("features", "k", "tokens"), "/train_transcoders_pause": (),
                  "/train_transcoders_resume": (), "/train_transcoders_stop": (), "/train_transcoders_status": (),
                  "/download_transcoders": ()},
             quantities=("graph top token", "graph top probability", "replacement score", "completeness score",
                         "graph nodes", "strongest graph feature", "token influence")),
    ViewSpec("blocks", "Building blocks", draws=True, params=("layer",),
             api={"/blocks": ("prompt", "layer", "drop_unknown")}),
    ViewSpec("sampling", "Sampling", draws=True, params=(*SAMPLING, "seed", "chat_format"),
             api={"/next_token": ("prompt", *SAMPLING, "drop_unknown", "chat_format"),
                  "/compare": ("prompt", "settings", "max_new_tokens", "seed", "drop_unknown", "chat_format"),
                  "/generate": ("prompt", *SAMPLING, "max_new_tokens", "seed", "drop_unknown", "chat_format")},
             quantities=("top token", "probability", "tokens kept", "greedy continuation", "most repetitive column")),
    ViewSpec("experiments", "Experiments", params=("heads", "answer", "against", "clean", "corrupted", "patch", "layer"),
             api={"/ablate": ("prompt", "heads", "attn_layers", "mlp_layers", "neurons", "mode", "position",
                              "temperature", "max_new_tokens", "seed", "drop_unknown"),
                  "/importance_map": ("mode",),
                  "/logit_attribution": ("prompt", "position", "target", "baseline", "drop_unknown"),
                  "/activation_patching": ("clean", "corrupted", "kind", "layer", "target", "baseline",
                                           "drop_unknown"),
                  "/model_b_shipped": ("name",), "/model_b_copy": (), "/model_b_zip": ("upload",),
                  "/model_b_nanogpt": ("ckpt_upload", "meta_upload"), "/swap_models": (),
                  "/compare_models": ("prompt", "drop_unknown")},
             quantities=("split logit", "largest part", "part", "head part", "top head", "top head's source",
                         "clean difference", "corrupted difference", "restored", "most restored", "loss rise",
                         "bits per character")),
    ViewSpec("grokking", "Grokking", api={"/grokking_model": (), "/grokking": ("neuron",)},
             quantities=("test accuracy", "key frequencies")),
    ViewSpec("guide", "Guide"),
)
VIEW = {view.id: view for view in VIEWS}
TAB_IDS = tuple(VIEW)
DEFAULT_VIEW = "attention"  # the tab the page opens on
PAGE_PARAMS = ("prompt", "drop_unknown")  # link parameters outside every tab (the shared prompt above them)


def public_api() -> dict:
    """Every public endpoint -> its parameter names."""
    return {name: params for view in VIEWS for name, params in view.api.items()}
