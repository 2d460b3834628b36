"""Per-session state: the model being inspected, its data, its training run."""
