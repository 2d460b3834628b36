"""Transformer Explorer UI layer: figures, captions and thin Gradio callbacks."""
