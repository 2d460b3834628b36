"""Checkpoints on disk: saving, bounded loading of untrusted files, and conversion."""
