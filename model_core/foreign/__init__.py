"""Models the explorer did not build (a learner's notebook class, nanoGPT's, Hugging Face's, TransformerLens's):
converted exactly when their family is known (`exact`), else read from their own forward pass (`reading`) and
wrapped so the app's views can draw them (`read_model`); their tokenizers adapted (`vocab`). docs/notebooks.md."""
