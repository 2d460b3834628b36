"""The tokenizer a learner hands to transformer_explorer.show, as one of ours: ours as it is; a Hugging Face
tokenizer (its `tokenizers` backend); a character vocabulary (the seeds' stoi or itos dict, or the sorted list or
string of characters); a word vocabulary (a dict of whole words, as seed 002's token_to_id); or a pair of
encode/decode callables."""
from typing import Callable, Optional

from model_core.data.tokenization import BPETokenizer, CharTokenizer, UnknownTokenError, WordTokenizer, visible


class VocabError(ValueError):
    """The tokenizer cannot be used; the message says what was given and what would work."""


ACCEPTED = ("pass the model's tokenizer: a Hugging Face tokenizer, a character vocabulary (your stoi or itos dict, "
            "or the list of characters), or (encode, decode) functions")


def as_tokenizer(given, vocab_size: int):
    """One of our tokenizers (or a CallableTokenizer) for `given`, checked against the model's vocabulary size."""
    tok = convert(given)
    if tok.vocab_size > vocab_size:
        raise VocabError(f"the tokenizer has {tok.vocab_size} tokens but the model's logits cover {vocab_size}: "
                         "is this the model's own tokenizer?")
    if tok.kind in ("char", "word") and tok.vocab_size != vocab_size:  # a subword tokenizer may be padded, not these
        raise VocabError(f"the vocabulary has {tok.vocab_size} tokens but the model's logits cover {vocab_size}: "
                         "pass the vocabulary the model was built with.")
    return tok


def convert(given):
    if given is None:
        raise VocabError(f"No tokenizer: {ACCEPTED}.")
    if all(hasattr(given, a) for a in ("kind", "encode", "decode", "token_label")):
        return given  # one of ours
    backend = getattr(given, "backend_tokenizer", None)
    if backend is not None:  # transformers' fast tokenizer
        return BPETokenizer(backend, getattr(given, "chat_template", None))
    if type(given).__module__.startswith("tokenizers"):
        return BPETokenizer(given)
    if isinstance(given, dict):
        return from_dict(given)
    if isinstance(given, str) or isinstance(given, (list, tuple)) and all(isinstance(c, str) for c in given):
        return vocabulary(list(given))
    if isinstance(given, (list, tuple)) and len(given) == 2 and all(callable(f) for f in given):
        return CallableTokenizer(*given)
    raise VocabError(f"A {type(given).__name__} is not a tokenizer the explorer knows: {ACCEPTED}.")


def from_dict(d: dict):
    """stoi {token: id} or itos {id: token}, ids 0..n-1."""
    if all(isinstance(k, int) and isinstance(v, str) for k, v in d.items()):
        d = {v: k for k, v in d.items()}
    if not all(isinstance(k, str) and isinstance(v, int) for k, v in d.items()):
        raise VocabError(f"A vocabulary dict maps tokens to ids (stoi) or ids to tokens (itos): {ACCEPTED}.")
    if sorted(d.values()) != list(range(len(d))):
        raise VocabError("The vocabulary's ids are not 0, 1, ... n-1 each once: is it the model's own?")
    return vocabulary(sorted(d, key=d.get))


def vocabulary(tokens: list):
    """Tokens in id order: characters -> CharTokenizer; whole words -> WordTokenizer."""
    if len(set(tokens)) != len(tokens):
        raise VocabError("The vocabulary lists a token twice.")
    if all(len(t) == 1 for t in tokens):
        return CharTokenizer(tokens)
    return WordTokenizer(tokens)


class CallableTokenizer:
    """A learner's encode(text) -> ids and decode(ids) -> text as a tokenizer (labels come from decode)."""

    kind = "callable"

    def __init__(self, encode: Callable, decode: Callable, vocab_size: Optional[int] = None):
        self._encode, self._decode = encode, decode
        self.size = vocab_size

    @property
    def vocab_size(self) -> int:
        return self.size or 0

    def unknown(self, text: str) -> set:
        try:
            self.encode(text)
            return set()
        except UnknownTokenError as err:
            return set(err.unknown)

    def encode(self, text: str) -> list[int]:
        try:
            ids = [int(i) for i in self._encode(text)]
        except Exception as err:  # noqa: BLE001 - the learner's function refused the text
            raise UnknownTokenError({c for c in text if not self._encodes(c)} or set(text)) from err
        return ids

    def _encodes(self, c: str) -> bool:
        try:
            self._encode(c)
            return True
        except Exception:  # noqa: BLE001
            return False

    def decode(self, ids) -> str:
        return str(self._decode([int(i) for i in ids]))

    def strip_unknown(self, text: str) -> str:
        return "".join(c for c in text if self._encodes(c))

    def token_label(self, token_id: int) -> str:
        return visible(self.decode([token_id]))

    def to_dict(self) -> dict:
        raise VocabError("A tokenizer made of your own encode/decode functions cannot be saved in a checkpoint.")
