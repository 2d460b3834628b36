"""Names, choices and ranges the tabs build their controls from and the callbacks read them by.

Plain data, importable without torch, so the page is built before the model code loads (explorer.lazy)."""

# The widest range each model slider offers before it is fitted to the inspected model (the API always sees
# these: it never receives the browser's resizing). Large enough for any model this app builds or loads.
SLIDER_MAX = {"layer": 63, "hidden": 64, "head": 63, "query": 4095}

# The Data tab's "Validation split" choices (callbacks.data maps each to the share of tokens held out)
VAL_SPLIT_LABELS = {"10%": "10% (held out, never trained on)", "none": "none — evaluate on the training text"}
DEFAULT_VAL_SPLIT = "10%"

# The Train tab's controls, in the order the tab passes them (model shape, then the optimiser)
ARCH_FIELDS = ("n_layers", "n_heads", "d_model", "block_size", "activation", "norm", "norm_placement",
               "positional", "tie_weights", "attn_only", "dropout", "qk_norm")
OPTIM_FIELDS = ("lr", "batch_size", "max_steps", "warmup_steps", "weight_decay", "grad_clip", "eval_interval",
                "optimizer", "muon_lr")

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
