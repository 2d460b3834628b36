"""The Train tab's numeric fields: what each may hold, checked before any model or optimiser is built."""
from explorer.callbacks import validation
from explorer.common.limits import LIMITS
from model_core.training.train_config import MAX_NS_STEPS

STEPS = "max_steps"  # fields whose maximum is the server's --max-steps, read when checked (app.py sets it)

# field: (label the user sees, whole number?, minimum, maximum). The ranges are the Train tab's sliders and
# boxes, so the API accepts what the page offers; they also stop, say, 10**6 layers before GPT(cfg) is
# constructed at all, and refuse settings that only diverge (lr 10) or mean nothing (infinite weight decay).
FIELD_RULES = {
    "n_layers": ("Layers", True, 1, 8),
    "n_heads": ("Heads", True, 1, 8),
    "d_model": ("d_model", True, 2, 512),  # 2: seed 002 (StatQuest); 6: seed 004
    "mlp_ratio": ("FFN width (× d_model)", False, 0.25, 8.0),
    "block_size": ("Block size", True, 2, 256),  # 5: seed 002
    "dropout": ("Dropout", False, 0.0, 0.5),
    "lr": ("Learning rate", False, 1e-6, 1.0),
    "batch_size": ("Batch size", True, 1, 128),
    "max_steps": ("Steps", True, 1, None),  # start_training compares it with --max-steps itself
    "warmup_steps": ("Warmup steps", True, 0, STEPS),
    "weight_decay": ("Weight decay", False, 0.0, 10.0),  # the grokking preset: 2.0
    "grad_clip": ("Gradient clipping", False, 0.0, 100.0),
    "eval_interval": ("Evaluate every N steps", True, 1, STEPS),
    "muon_lr": ("Muon learning rate", False, 1e-6, 1.0),
    "muon_ns_steps": ("Muon Newton–Schulz steps", True, 1, MAX_NS_STEPS),
}


def checked_field(name: str, value):
    """value checked against FIELD_RULES[name]; fields without a rule (choices, switches) pass through
    unchanged for GPTConfig / TrainConfig to check."""
    if name not in FIELD_RULES:
        return value
    label, whole, low, high = FIELD_RULES[name]
    high = LIMITS.max_steps if high == STEPS else high
    check = validation.whole_number if whole else validation.number
    return check(value, label, minimum=low, maximum=high)
