"""Helpers every analysis callback uses."""
from explorer.callbacks import validation
from explorer.callbacks.prompting import encode_prompt, token_labels
from explorer.state.session import Analysis, Session, require_model


def analyse(session: Session, prompt: str, drop_unknown: bool = False) -> Analysis:
    """The session's cached activations for this prompt."""
    require_model(session)
    tok = session.tokenizer
    ids = encode_prompt(tok, prompt, session.model.cfg.block_size, drop_unknown)
    return session.analysis(prompt, ids, token_labels(tok, ids))


def clamped_index(value, name: str, last: int, default: int = 0) -> int:
    """A whole number clamped to 0..last: a slider may still show the range of the previous model, so any
    whole number is moved into range; NaN, text, fractions and the like are refused with a message."""
    return min(max(validation.whole_number(value, name, default=default), 0), last)


def clamp_layer(session: Session, layer) -> int:
    return clamped_index(layer, "Layer", session.model.cfg.n_layers - 1)


def clamp_head(session: Session, head) -> int:
    return clamped_index(head, "Head", session.model.cfg.n_heads - 1)


def clamp_query(query, n_tokens: int) -> int:
    """Query position in the prompt: negative (or empty) is the last token; past the end is the last too."""
    q = validation.whole_number(query, "Query position", default=-1)
    return n_tokens - 1 if q < 0 else min(q, n_tokens - 1)
