"""The model classes of the seeds (../shared/seeds/), copied as they are written there (comments shortened; seed
002's LightningModule is an nn.Module, the only change), each in its own module because they read their notebook's
globals. tests/test_notebook.py opens each with transformer_explorer.show."""
