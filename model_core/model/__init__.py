"""The hooked decoder-only GPT: config, hook points, layers, the model, and generation."""
