"""Training runs: configs, presets, optimisers, the trainer and its child process."""
