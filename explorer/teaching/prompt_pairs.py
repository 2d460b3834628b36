"""Built-in clean/corrupted prompt pairs for activation patching: the same length in tokens, differing where
the answer is decided."""

PAIRS = {  # shipped model -> (clean, corrupted, what the pair shows)
    "shakespeare": ("VOLUMNIA:\nGood morrow.\n\nV", "VIRGILIA:\nGood morrow.\n\nV",
                    "the name that spoke before is likely to speak again: after V the model writes O when "
                    "VOLUMNIA spoke, I when VIRGILIA did"),
    "smollm2-135m": ("The Eiffel Tower is in the city of", "The Colosseum is in the city of",
                     "a fact recalled from the subject: Paris for the tower, Rome for the arena"),
}
DEFAULT_PAIR = PAIRS["shakespeare"]


def prompt_pair(model_name: str) -> tuple[str, str, str]:
    """The pair for this model (the character pair for any other shipped or trained character model)."""
    return PAIRS.get(model_name, DEFAULT_PAIR)
