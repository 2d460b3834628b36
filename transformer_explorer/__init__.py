"""Transformer Explorer in a notebook: open the model you built, inline, and read the same numbers in code.

    import transformer_explorer as tx
    view = tx.show(model, stoi)          # the explorer in the cell's output, on this model's weights now
    view.cache("ROMEO:")["blocks.0.attn.hook_pattern"]   # [n_heads, T, T], what the Attention tab draws

docs/notebooks.md says which models and tokenizers it opens and how."""
from transformer_explorer.opening import ShowError, opened
from transformer_explorer.view import View, show

__all__ = ["show", "View", "ShowError", "opened"]
