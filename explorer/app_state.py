"""App-wide settings chosen at launch (app.py flags)."""
from .shipped import DEFAULT_MODEL

default_model = DEFAULT_MODEL
