"""Helpers every analysis callback uses."""
import gradio as gr

from explorer.callbacks import validation
from explorer.callbacks.prompting import encode_prompt, token_labels
from explorer.state.inspected import Analysis
from explorer.state.session import Session, require_model
from model_core.analysis.scale import analysis_tokens, is_large


def analyse(session: Session, prompt: str, drop_unknown: bool = False, names=None) -> Analysis:
    """The session's cached activations for this prompt. names (tuple of hook names): on a large model only
    these are kept (every view asks for what it draws); a small model keeps every hook point."""
    require_model(session)
    tok, cfg = session.inspected.tokenizer, session.inspected.config
    ids = prompt_ids(session, prompt, drop_unknown)
    names = tuple(names or ()) if is_large(cfg) else None
    return session.inspected.analysis(prompt, ids, token_labels(tok, ids), names=names)


def prompt_ids(session: Session, prompt: str, drop_unknown: bool = False) -> list[int]:
    """The prompt's token ids, cropped (with a warning) to what the analysis tabs read on this model."""
    cfg = session.inspected.config
    ids = encode_prompt(session.inspected.tokenizer, prompt, cfg.block_size, drop_unknown)
    cap = analysis_tokens(cfg)
    if len(ids) > cap:
        gr.Warning(f"The prompt is {len(ids)} tokens long; the analysis tabs read at most {cap} tokens of a model "
                   f"this large (its activations over {cfg.n_layers} layers are big), so only the last {cap} are "
                   "used. Shorten the prompt to choose which.")
        ids = ids[-cap:]
    return ids


def needs(session: Session, *what: str) -> None:
    """A model read from its own forward pass (model_core.foreign.read_model) says in a sentence which of what a
    view needs it could not find; our GPT has them all."""
    require = getattr(session.inspected.held.model, "require", None)
    for need in what if require else ():
        require(need)


def layer_names(layer: int, *shorts: str) -> tuple[str, ...]:
    """Full hook names of some short names at one layer: layer_names(3, 'pattern') -> ('blocks.3.attn.hook_pattern',)."""
    from model_core.model.cache import full_name

    return tuple(full_name((short, layer)) for short in shorts)


def all_layers(n_layers: int, *shorts: str) -> tuple[str, ...]:
    """layer_names for every layer."""
    return tuple(name for layer in range(n_layers) for name in layer_names(layer, *shorts))


def clamped_index(value, name: str, last: int, default: int = 0) -> int:
    """A whole number clamped to 0..last: a slider may still show the range of the previous model, so any
    whole number is moved into range; NaN, text, fractions and the like are refused with a message."""
    return min(max(validation.whole_number(value, name, default=default), 0), last)


def clamp_layer(session: Session, layer) -> int:
    return clamped_index(layer, "Layer", session.inspected.model.cfg.n_layers - 1)


def clamp_head(session: Session, head) -> int:
    return clamped_index(head, "Head", session.inspected.model.cfg.n_heads - 1)


def clamp_query(query, n_tokens: int) -> int:
    """Query position in the prompt: negative (or empty) is the last token; past the end is the last too."""
    q = validation.whole_number(query, "Query position", default=-1)
    return n_tokens - 1 if q < 0 else min(q, n_tokens - 1)
