"""When a model is too big for the views built for the toy models (1-8 layers x 1-8 heads, vocabularies of at
most 4,096 tokens): a pretrained model such as SmolLM2-135M (30 x 9 heads, 49,152 tokens) gets compact views."""
LARGE_HEADS = 64  # more heads than the largest toy model (8 x 8): an overview, then one layer's heads in detail
LARGE_VOCAB = 8192  # a larger vocabulary is shown as its top-k or a sample, never whole
LARGE_PROMPT_TOKENS = 256  # longest prompt the analysis tabs read on a large model (activations of 30 layers)


def is_large(cfg) -> bool:
    """Does the GPTConfig need the compact views?"""
    return cfg.n_layers * cfg.n_heads > LARGE_HEADS or cfg.vocab_size > LARGE_VOCAB


def analysis_tokens(cfg) -> int:
    """The longest prompt the analysis tabs read on this model."""
    return min(cfg.block_size, LARGE_PROMPT_TOKENS) if is_large(cfg) else cfg.block_size
LARGE_WINDOW_TOKENS = 64  # text windows of the head report and the evaluation set (not block_size: 512 x 270 heads)
LARGE_EVAL_WINDOWS = 8  # windows in a large model's evaluation set (each ablation costs a pass over all of them)


def window_tokens(cfg) -> int:
    """Length of the text windows the report card and the experiments read on this model."""
    return min(cfg.block_size, LARGE_WINDOW_TOKENS) if is_large(cfg) else cfg.block_size
