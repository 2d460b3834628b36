"""Built-in clean/corrupted prompt pairs for activation patching: the same length in tokens, differing where
the answer is decided."""

PAIRS = {  # shipped model -> (clean, corrupted, what the pair shows)
    # +9.0 and -8.1 logits (e vs s) on the shipped model, moved by its previous-token head 0.1 (the lesson
    # who-wrote-the-answer checks it); the old VOLUMNIA / VIRGILIA pair differed by +0.07
    "shakespeare": ("To be, or not to be, that is the qu", "To be, or not to be, that is the mu",
                    "the letter before the last decides the next one: after qu the model writes e (queen, "
                    "question), after mu it writes s (must, muse)"),
    "smollm2-135m": ("The Eiffel Tower is in the city of", "The Colosseum is in the city of",
                     "a fact recalled from the subject: Paris for the tower, Rome for the arena"),
}
DEFAULT_PAIR = PAIRS["shakespeare"]


def prompt_pair(model_name: str) -> tuple[str, str, str]:
    """The pair for this model (the character pair for any other shipped or trained character model)."""
    return PAIRS.get(model_name, DEFAULT_PAIR)
