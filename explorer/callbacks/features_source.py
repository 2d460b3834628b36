"""Which SAE the Features tab reads for the session's model: one uploaded for it (a SAELens folder as .zip),
else the one shipped for an unmodified shipped model; and that SAE's feature statistics (shipped beside it, or
computed once on the model's validation text and kept with the upload)."""
from typing import Optional

from explorer.callbacks.experiments import validation_source
from explorer.callbacks.second_model import uploaded_path
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.common.shipped_list import display_name
from explorer.state.inspected import SAEChoice
from explorer.state.session import Session, require_model
from explorer.state.shipped_features import shipped_sae, shipped_sae_names
from model_core.analysis.scale import is_large
from model_core.features.activations import HookError, check_hook
from model_core.features.dashboard import FeatureStats, feature_stats
from model_core.features.sae import SparseAutoencoder
from model_core.features.saelens_format import SAEFileError, load_sae

STATS_TOKENS = 65_536  # validation tokens an uploaded SAE's statistics read on a small model
LARGE_STATS_TOKENS = 8_192  # ... on a large (pretrained) one: each token is a pass through 15 of its 30 layers


def no_sae_sentence(session: Session) -> str:
    shipped = ", ".join(map(display_name, shipped_sae_names())) or "none"
    return (f"There is no SAE for the inspected model ({display_name(session.inspected.name)}). SAEs ship for "
            f"these models: {shipped} (pick one on the Train tab's model list), or upload an SAE trained on this model "
            "(a .zip of a SAELens folder: cfg.json + sae_weights.safetensors; `python -m model_core.features "
            "train` makes one).")


def current_sae(session: Session) -> SAEChoice:
    """The SAE the tab reads now; UserError saying how to get one when there is none."""
    require_model(session)
    caches = session.inspected.caches
    if caches.sae is not None:
        if caches.sae.stats is None:
            caches.sae.stats = _stats_for(session, caches.sae.sae)
        return caches.sae
    key = session.inspected.shared_key or ""
    found = shipped_sae(key.removeprefix("shipped:")) if key.startswith("shipped:") else None
    if found is None:
        raise UserError(no_sae_sentence(session))
    sae, stats = found
    if stats is None:  # a shipped SAE whose statistics were not built: computed once per session and model
        if caches.shipped_sae_stats is None:
            caches.shipped_sae_stats = _stats_for(session, sae)
        stats = caches.shipped_sae_stats
    return SAEChoice(sae, stats, "shipped with the app")


def _stats_for(session: Session, sae: SparseAutoencoder) -> FeatureStats:
    name, ids = validation_source(session)
    cfg = session.inspected.config
    cap = LARGE_STATS_TOKENS if is_large(cfg) else STATS_TOKENS
    window = min(cfg.block_size, 128)
    if len(ids) < window:
        raise UserError(f"The validation text ({name}) has {len(ids)} tokens, fewer than one window of {window}.")
    return feature_stats(session.inspected.model, sae, ids[:cap], window)


def load_sae_upload(session: Session, upload) -> str:
    """Read an uploaded SAE for the inspected model (bounded like other uploads); -> a status line."""
    require_model(session)
    p = uploaded_path(upload, "a .zip of an SAE folder (cfg.json + sae_weights.safetensors)")
    try:
        sae = load_sae(p, max_bytes=LIMITS.max_upload_bytes)
    except SAEFileError as err:
        raise UserError(str(err).replace(str(p), p.name)) from None
    _check_fits(session, sae)
    session.inspected.caches.sae = SAEChoice(sae.requires_grad_(False), None, f"uploaded: {p.name}")
    return f"Loaded **{p.name}**: {sae.describe()}. Its feature statistics are computed on first use."


def _check_fits(session: Session, sae: SparseAutoencoder) -> None:
    try:
        width = check_hook(session.inspected.config, sae.cfg.hook_name)
    except HookError as err:
        raise UserError(f"The SAE reads {sae.cfg.hook_name or 'no named hook'}: {err}") from None
    if width != sae.cfg.d_in:
        raise UserError(f"The SAE reads {sae.cfg.d_in}-wide activations, but {sae.cfg.hook_name} is {width} wide "
                        f"in the inspected model: it was trained on another model.")


def describe_choice(choice: SAEChoice, session: Session) -> Optional[str]:
    """One line about the SAE: what it reads, where it came from, its recorded evaluation if any."""
    ev = choice.sae.cfg.extra.get("evaluation") or {}
    numbers = (f" Explained variance {ev['explained_variance']:.3f}, CE loss recovered "
               f"{ev['ce_loss_recovered']:.3f}, L0 {ev['l0']:.0f}." if {"explained_variance", "ce_loss_recovered",
                                                                        "l0"} <= ev.keys() else "")
    return f"SAE ({choice.source}): {choice.sae.describe()}.{numbers}"
