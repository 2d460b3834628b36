"""Transformer Explorer UI layer: figures, captions and thin Gradio callbacks."""
import os

# Before anything imports gradio: no analytics, no telemetry (the app never goes online at run time).
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# Gradio's queue rebuilds a pandas table of its last GRADIO_ANALYTICS_MAX_EVENTS (10,000) events after every
# event, for a monitoring page this app turns off (enable_monitoring=False): under a class it was ~11 % of the
# server's Python time and grew with every event served (py-spy, docs/classroom.md). Keep few, summarise never.
os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "16")
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", str(10**12))
