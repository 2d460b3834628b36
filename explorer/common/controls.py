"""Names, choices and ranges the tabs build their controls from and the callbacks read them by.

Plain data, importable without torch, so the page is built before the model code loads (explorer.tabs.lazy)."""

# The shared prompt box's text on a fresh page (every analysis tab reads it)
DEFAULT_PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak."

# The widest range each model slider offers before it is fitted to the inspected model (the API always sees
# these: it never receives the browser's resizing). Large enough for any model this app builds or loads.
SLIDER_MAX = {"layer": 63, "hidden": 64, "head": 63, "query": 4095}

# The Data tab's "Validation split" choices (callbacks.data maps each to the share of tokens held out)
VAL_SPLIT_LABELS = {"10%": "10% (held out, never trained on)", "none": "none — evaluate on the training text"}
DEFAULT_VAL_SPLIT = "10%"

# The Train tab's controls, in the order the tab passes them (model shape, then the optimiser)
ARCH_FIELDS = ("n_layers", "n_heads", "d_model", "block_size", "activation", "norm", "norm_placement",
               "positional", "tie_weights", "attn_only", "dropout", "qk_norm", "mlp_ratio", "init")
# mlp_ratio is the FFN width as a multiple of d_model (d_mlp = mlp_ratio x d_model, GPT-2: 4): halving d_model
# halves the FFN with it, as the automatic width did.
OPTIM_FIELDS = ("lr", "batch_size", "max_steps", "warmup_steps", "weight_decay", "grad_clip", "eval_interval",
                "optimizer", "muon_lr", "muon_ns_steps", "decay_embeddings")
# link / lesson parameter names of those fields and the Data tab's, where they differ from the field name
CONTROL_NAMES = {"max_steps": "steps", "warmup_steps": "warmup", "eval_interval": "eval_every", "kind": "tokenizer"}

# The Sampling tab's side-by-side settings table
COMPARE_HEADERS = ["temperature", "top_k", "top_p", "min_p"]
DEFAULT_COMPARISON = [[0.5, 0, 1.0, 0.0], [1.0, 0, 1.0, 0.0], [1.5, 0, 1.0, 0.0], [1.0, 0, 0.9, 0.0]]

# Kinds of values a tab shows, for its 'Download data' zip: a figure (gr.Plot or a live chart) or a table
TABLE, FIGURE = "table", "figure"

# Column headers of the tables the tabs show (explorer.figures fills their rows). Attention tab, head
# statistics: (stats key, column header); values are averages over queries, see model_core.analysis.heads
HEAD_TABLE_COLUMNS = (
    ("entropy", "entropy (bits)"),
    ("prev_token", "prev-token"),
    ("self", "self"),
    ("first_token", "first-token (sink)"),
    ("mean_distance", "mean distance"),
    ("entropy_no_sink", "entropy, no sink (bits)"),
    ("prev_token_no_sink", "prev-token, no sink"),
    ("self_no_sink", "self, no sink"),
    ("mean_distance_no_sink", "mean distance, no sink"),
)
HEAD_TABLE_HEADERS = ["head"] + [header for _, header in HEAD_TABLE_COLUMNS]
TOP_TOKENS_HEADERS = ["rank", "position", "activation", "context"]  # FFN tab, a neuron's top activations
REPORT_HEADERS = ["head", "role", "score", "explanation", "induction", "previous token", "duplicate token", "self",
                  "local", "first token (sink)", "breadth (bits)", "breadth max (bits)"]
GENERATION_TABLE_HEADERS = ["step", "token", "probability (after filtering)", "model probability",
                            "cumulative log-prob"]

# The Train tab's live attention chart, before a run has a snapshot to describe
LIVE_CAPTION = "Attention of every head on a fixed probe text, updated as the model trains."


def mlp_ratio_of(model: dict) -> float:
    """The FFN width control's value for GPTConfig fields (d_mlp resolved): d_mlp / d_model."""
    return round(model["d_mlp"] / model["d_model"], 4)


def d_mlp_for(mlp_ratio: float, d_model: int) -> int:
    """GPTConfig's d_mlp for the control's ratio: the nearest whole number of neurons, at least one."""
    return max(1, round(mlp_ratio * d_model))

# Experiments tab, activation patching: what the "What to patch" menu offers -> model_core.analysis.patching kind
PATCH_CHOICES = {
    "residual stream (layer × position)": "resid_pre",
    "each head, all positions (layer × head)": "z",
    "each head × position, in one layer": "z_pos",
    "FFN output (layer × position)": "mlp_out",
}
PATCH_WITH_LAYER = "each head × position, in one layer"  # the one choice the layer slider applies to
