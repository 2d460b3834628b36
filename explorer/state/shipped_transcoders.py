"""The transcoder sets that ship in explorer/assets/transcoders/<model name>/ (circuit-tracer's folder layout, each
layer's feature statistics beside it), loaded once per process and shared read-only by every session inspecting
that shipped model."""
import functools
from pathlib import Path
from typing import Optional

from model_core.features.dashboard import load_stats
from model_core.features.transcoder_format import CONFIG, load_transcoders, stats_file

TRANSCODERS_DIR = Path(__file__).resolve().parents[1] / "assets" / "transcoders"


def shipped_transcoder_names() -> list[str]:
    """Shipped models that have a transcoder set."""
    if not TRANSCODERS_DIR.is_dir():
        return []
    return sorted(p.name for p in TRANSCODERS_DIR.iterdir() if (p / CONFIG).is_file())


@functools.lru_cache(maxsize=4)
def shipped_transcoders(model_name: str) -> Optional[tuple]:
    """(transcoders, one FeatureStats or None per layer) shipped for the model, or None."""
    if model_name not in shipped_transcoder_names():
        return None
    folder = TRANSCODERS_DIR / model_name
    transcoders, _ = load_transcoders(folder)
    for tc in transcoders:
        tc.requires_grad_(False)
    return transcoders, [load_stats(folder, stats_file(tc.cfg.layer)) for tc in transcoders]
