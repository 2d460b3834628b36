"""The run before the current one, kept so that the Train tab's charts draw it faded beside the new run: a lesson
that compares two runs (with and without weight decay) sees both on the same axes."""
from typing import Optional

from explorer.callbacks.train_fields import FIELD_RULES
from explorer.common.controls import OPTIM_FIELDS
from explorer.state.training_run import TrainingRun
from explorer.state.workspace import PreviousRun

EVALS_KEPT = 400  # evaluation rows kept of the previous run (evenly thinned, its last one always kept)
SETTINGS_NAMED = 2  # the legend names at most this many of the settings the two runs differ in
TRAIN_SETTINGS = (*OPTIM_FIELDS, "seed")  # TrainConfig fields a student sets (the model's: every GPTConfig field)


def kept_run(run: Optional[TrainingRun], model_cfg, train_cfg, corpus: str) -> Optional[PreviousRun]:
    """What the charts keep of run once a run of (model_cfg, train_cfg) on corpus replaces it; None when there is
    nothing to compare: no run, no evaluation yet, or another text or vocabulary (a loss then means another thing)."""
    if run is None or not run.progress.evals:
        return None
    p = run.progress
    if run.corpus != corpus or p.model.cfg.vocab_size != model_cfg.vocab_size:
        return None
    changes = setting_changes(run_settings(p.model.cfg, p.cfg), run_settings(model_cfg, train_cfg))
    return PreviousRun(previous_label(changes), thinned(p.evals, EVALS_KEPT), p.has_val)


def run_settings(model_cfg, train_cfg) -> dict:
    """The settings a student chooses for a run: the optimiser's and the seed, then the model's shape (not its
    vocabulary, which is the data's)."""
    shape = {k: v for k, v in model_cfg.to_dict().items() if k != "vocab_size"}
    return {**{k: getattr(train_cfg, k) for k in TRAIN_SETTINGS}, **shape}


def setting_changes(before: dict, after: dict) -> dict:
    """{setting: its earlier value} for each setting the two runs differ in."""
    return {k: v for k, v in before.items() if after.get(k) != v}


def previous_label(changes: dict) -> str:
    """'previous run (weight decay 2.0)': the earlier values of the first few settings that changed."""
    named = [f"{setting_name(k)} {setting_value(v)}" for k, v in list(changes.items())[:SETTINGS_NAMED]]
    more = ", …" if len(changes) > SETTINGS_NAMED else ""
    return f"previous run ({', '.join(named) + more if named else 'same settings'})"


def setting_name(field: str) -> str:
    """A setting as the Train tab labels it ('weight decay'), else its field name ('norm placement', 'd_mlp')."""
    if field in FIELD_RULES:
        label = FIELD_RULES[field][0]
        return label[:1].lower() + label[1:]
    return field if field.startswith("d_") else field.replace("_", " ")


def setting_value(value) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def thinned(rows: list, most: int) -> list:
    """At most `most` of rows, evenly spread, the last one always kept."""
    if len(rows) <= most:
        return list(rows)
    kept = rows[::-(-len(rows) // most)]  # a stride of ceil(len / most) keeps at most `most`
    return kept[:-1] + [rows[-1]]
