"""The SAEs that ship in explorer/assets/features/<model name>/ (SAELens folders with feature_stats.safetensors),
loaded once per process and shared read-only by every session inspecting that shipped model."""
import functools
from pathlib import Path
from typing import Optional

from model_core.features.dashboard import FeatureStats, load_stats
from model_core.features.saelens_format import load_sae

FEATURES_DIR = Path(__file__).resolve().parents[1] / "assets" / "features"


def shipped_sae_names() -> list[str]:
    """Shipped models that have an SAE."""
    if not FEATURES_DIR.is_dir():
        return []
    return sorted(p.name for p in FEATURES_DIR.iterdir() if (p / "cfg.json").is_file())


@functools.lru_cache(maxsize=4)
def shipped_sae(model_name: str) -> Optional[tuple]:
    """(SparseAutoencoder, FeatureStats or None) shipped for the model, or None."""
    if model_name not in shipped_sae_names():
        return None
    folder = FEATURES_DIR / model_name
    sae = load_sae(folder)
    sae.requires_grad_(False)
    stats: Optional[FeatureStats] = load_stats(folder)
    return sae, stats
