"""Transformer Explorer's model core: a hooked decoder-only GPT and what studies it. No UI imports."""
from .cache import ActivationCache
from .config import ConfigError, GPTConfig
from .hooks import HookPoint
from .model import GPT

__all__ = ["GPT", "GPTConfig", "ConfigError", "ActivationCache", "HookPoint"]
