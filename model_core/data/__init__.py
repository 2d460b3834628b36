"""Training texts, tokenizers and token tensors."""
