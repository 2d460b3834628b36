"""Helpers every analysis callback uses."""
from ..prompting import encode_prompt, token_labels
from ..session import Analysis, Session, require_model


def analyse(session: Session, prompt: str, drop_unknown: bool = False) -> Analysis:
    """The session's cached activations for this prompt."""
    require_model(session)
    tok = session.tokenizer
    ids = encode_prompt(tok, prompt, session.model.cfg.block_size, drop_unknown)
    return session.analysis(prompt, ids, token_labels(tok, ids))


def clamp_layer(session: Session, layer) -> int:
    return min(max(int(layer or 0), 0), session.model.cfg.n_layers - 1)


def clamp_head(session: Session, head) -> int:
    return min(max(int(head or 0), 0), session.model.cfg.n_heads - 1)
