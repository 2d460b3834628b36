"""Which demo models ship in explorer/assets/models/, without loading any: the page lists them before torch
is imported (explorer.state.shipped loads them)."""
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parents[1] / "assets" / "models"
DEFAULT_MODEL = "shakespeare"


def shipped_models() -> list[str]:
    """Names of the checkpoints in explorer/assets/models/, default first."""
    names = sorted(p.name for p in MODELS_DIR.iterdir() if (p / "config.json").exists()) if MODELS_DIR.exists() else []
    return sorted(names, key=lambda n: n != DEFAULT_MODEL)


def check_model_name(name: str) -> None:
    """Refuse a name that is neither shipped nor the default (which falls back to an untrained model)."""
    if name != DEFAULT_MODEL and name not in shipped_models():
        raise ValueError(f"no shipped model named {name!r}; choose one of: {', '.join(shipped_models()) or 'none'}.")
