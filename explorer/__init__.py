"""Transformer Explorer UI layer: figures, captions and thin Gradio callbacks."""
import os

# Before anything imports gradio: no analytics, no telemetry (the app never goes online at run time).
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
