"""What show() opens: any decoder-only model object with its tokenizer, as a Checkpoint the app serves. Families the
converters know become our GPT (exact: model_core.foreign.exact); any other module is read from its own forward
pass (model_core.foreign.read_model). Every refusal is a ShowError with one sentence."""
import copy
from typing import Optional

from torch import nn

from explorer.common.controls import DEFAULT_PROMPT
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.checkpoints.convert_error import ConvertError
from model_core.foreign.exact import exact_gpt
from model_core.foreign.read_model import ReadModel
from model_core.foreign.reading import ReadError
from model_core.foreign.vocab import CallableTokenizer, VocabError, as_tokenizer, convert


class ShowError(ValueError):
    """The model or tokenizer cannot be opened; the message says why and what would work."""


def opened(model, tokenizer=None, prompt: Optional[str] = None) -> Checkpoint:
    """A Checkpoint of model with tokenizer as one of ours, and the prompt its views open on."""
    ckpt = checkpoint_of(model, tokenizer)
    ckpt.prompt = opening_prompt(ckpt.tokenizer, ckpt.model.cfg.block_size, prompt)
    return ckpt


def opening_prompt(tok, block_size: int, given: Optional[str]) -> Optional[str]:
    """The prompt a shown model's views open on: the one given (checked), else the app's own if the model reads it
    (None), else the same in lower case, else what is left of it in the model's vocabulary, else its first tokens."""
    if given is not None:
        unknown = tok.unknown(given)
        if unknown:
            raise ShowError(f"prompt: {', '.join(map(repr, sorted(unknown)[:10]))} "
                            f"{'is' if len(unknown) == 1 else 'are'} not in the model's vocabulary.")
        ids = tok.encode(given)
        if not ids or len(ids) > block_size:
            raise ShowError(f"prompt: the model reads 1 to {block_size} tokens; this one is {len(ids)}.")
        return given
    for text in (DEFAULT_PROMPT, DEFAULT_PROMPT.lower()):
        if not tok.unknown(text):
            ids = tok.encode(text)
            return None if text == DEFAULT_PROMPT and len(ids) <= block_size else tok.decode(ids[:block_size])
    kept = tok.strip_unknown(DEFAULT_PROMPT.lower())
    if len(kept.strip()) >= 12:
        return tok.decode(tok.encode(kept)[:block_size])
    return tok.decode(list(range(min(tok.vocab_size, block_size, 16))))


def checkpoint_of(model, tokenizer) -> Checkpoint:
    """A Checkpoint of model (a copy of its weights now) with tokenizer as one of ours."""
    if isinstance(model, Checkpoint):
        return model if tokenizer is None else Checkpoint(model.model, checked_tokenizer(tokenizer, model.model))
    if not isinstance(model, nn.Module):
        raise ShowError(f"show() opens a PyTorch model (an nn.Module); this is a {type(model).__name__}.")
    tokenizer = tokenizer if tokenizer is not None else getattr(model, "tokenizer", None)  # TransformerLens keeps one
    try:
        gpt = exact_gpt(model)
    except ConvertError as err:
        raise ShowError(f"{type(model).__name__}: {err}") from None
    if gpt is not None:
        return Checkpoint(gpt, checked_tokenizer(tokenizer, gpt), corpus=f"{type(model).__name__} from the notebook")
    check_table(model, tokenizer)
    try:  # a copy: the view shows the weights as they are now, whatever training follows in the notebook
        read = ReadModel.of(copy.deepcopy(model), probe_vocabulary(model, tokenizer))
    except ReadError as err:
        raise ShowError(str(err)) from None
    return Checkpoint(read, checked_tokenizer(tokenizer, read), corpus=f"{type(model).__name__} from the notebook")


def checked_tokenizer(tokenizer, model):
    try:
        tok = as_tokenizer(tokenizer, model.cfg.vocab_size)
    except VocabError as err:
        raise ShowError(str(err)) from None
    if isinstance(tok, CallableTokenizer):
        tok.size = model.cfg.vocab_size
    return tok


def check_table(model: nn.Module, tokenizer) -> None:
    """ShowError when the tokenizer has more tokens than the model's first embedding table (its token table, as
    models define it first) has rows, before its forward pass fails on an id it has no row for."""
    try:
        size = convert(tokenizer).vocab_size
    except (VocabError, ValueError):
        return
    table = next((m for m in model.modules() if isinstance(m, nn.Embedding)), None)
    if size and table is not None and size > table.num_embeddings:
        raise ShowError(f"the tokenizer has {size} tokens but {type(model).__name__}'s token embedding has "
                        f"{table.num_embeddings} rows: is this the model's own tokenizer?")


def probe_vocabulary(model: nn.Module, tokenizer) -> int:
    """How many token ids the model surely reads: its tokenizer's vocabulary, else its first embedding's rows."""
    try:
        size = convert(tokenizer).vocab_size
    except (VocabError, ValueError):
        size = 0
    if size:
        return size
    table = next((m for m in model.modules() if isinstance(m, nn.Embedding)), None)
    if table is None:
        raise ShowError(f"{type(model).__name__} has no nn.Embedding and no tokenizer was given: pass its tokenizer.")
    return table.num_embeddings
