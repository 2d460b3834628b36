"""Transformer Explorer's model core: a hooked decoder-only GPT and what studies it. No UI imports.

The names below load on first use (PEP 562), so `model_core.model.config`, `model_core.training.presets` and
the other plain-data modules import without torch: the app builds its page before torch is loaded."""
import importlib

_HOMES = {"GPT": "model.gpt", "GPTConfig": "model.config", "ConfigError": "model.config",
          "ActivationCache": "model.cache", "HookPoint": "model.hooks"}
__all__ = list(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'model_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value
