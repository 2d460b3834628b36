"""Tokenizers: char (one id per character), word (whitespace split), bpe (byte-level, Hugging Face).

All three share encode / decode / vocab_size / token_label / to_dict. (Named tokenization.py so it is never
confused with the Hugging Face `tokenizers` package it uses.)"""
import re
from functools import lru_cache
from typing import Optional

from model_core.data.native_errors import native_failure

TOKENIZER_KINDS = ("char", "word", "bpe")
BPE_MIN_VOCAB, BPE_MAX_VOCAB, BPE_DEFAULT_VOCAB = 256, 4096, 512
# distinct characters or words a tokenizer built from a text may have: as many as a checkpoint may hold
# (model_core.checkpoints.load_limits), so that every model trained here can be saved and opened again
MAX_VOCAB = 65_536
WORD = re.compile(r"<[^<>\s]+>|(?:(?!<[^<>\s]+>)\S)+")  # "<EOS>"-style specials stay whole even when glued to a word


class TokenizerError(ValueError):
    """A tokenizer cannot be built or restored; the message says how to fix it."""


class UnknownTokenError(ValueError):
    """The text has characters (or words) the vocabulary lacks; .unknown holds them."""

    def __init__(self, unknown: set, what: str = "characters"):
        self.unknown = set(unknown)
        shown = ", ".join(repr(u) for u in sorted(self.unknown)[:20])
        more = f" and {len(self.unknown) - 20} more" if len(self.unknown) > 20 else ""
        super().__init__(
            f"the text has {len(self.unknown)} {what} the tokenizer never saw in training: {shown}{more}. "
            f"Remove them (strip_unknown) or retrain on text that contains them."
        )


def visible(text: str) -> str:
    """Whitespace made visible for display: newline as ⏎, space as ␣, tab as ⇥."""
    return text.replace("\n", "⏎").replace(" ", "␣").replace("\t", "⇥").replace("\r", "␍")


class CharTokenizer:
    """One token per distinct character; ids follow sorted character order (as in char-rnn / nanoGPT)."""

    kind = "char"

    def __init__(self, chars: list[str]):
        self.chars = list(chars)
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def train(cls, text: str) -> "CharTokenizer":
        return cls(sorted(distinct(text, list, "characters")))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def unknown(self, text: str) -> set:
        return set(text) - self.stoi.keys()

    def encode(self, text: str) -> list[int]:
        missing = self.unknown(text)
        if missing:
            raise UnknownTokenError(missing)
        stoi = self.stoi
        return [stoi[c] for c in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)

    def strip_unknown(self, text: str) -> str:
        return "".join(c for c in text if c in self.stoi)

    def token_label(self, token_id: int) -> str:
        return visible(self.chars[token_id])

    def to_dict(self) -> dict:
        return {"kind": self.kind, "chars": self.chars}


class WordTokenizer:
    """One token per distinct whitespace-separated word (StatQuest style); decode joins with spaces."""

    kind = "word"

    def __init__(self, words: list[str]):
        self.words = list(words)
        self.stoi = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def train(cls, text: str) -> "WordTokenizer":
        return cls(sorted(distinct(text, WORD.findall, "words")))

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    def unknown(self, text: str) -> set:
        return set(WORD.findall(text)) - self.stoi.keys()

    def encode(self, text: str) -> list[int]:
        missing = self.unknown(text)
        if missing:
            raise UnknownTokenError(missing, what="words")
        return [self.stoi[w] for w in WORD.findall(text)]

    def decode(self, ids) -> str:
        return " ".join(self.words[i] for i in ids)

    def strip_unknown(self, text: str) -> str:
        return " ".join(w for w in WORD.findall(text) if w in self.stoi)

    def token_label(self, token_id: int) -> str:
        return self.words[token_id]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "words": self.words}


class BPETokenizer:
    """Byte-level BPE (GPT-2 style) trained with Hugging Face `tokenizers`; any text encodes exactly."""

    kind = "bpe"

    def __init__(self, hf_tokenizer, chat_template: Optional[str] = None):
        self.hf = hf_tokenizer
        self.chat_template = chat_template  # a pretrained chat model's Jinja template (model_core.data.chat)

    @classmethod
    def train(cls, text: str, vocab_size: int = BPE_DEFAULT_VOCAB) -> "BPETokenizer":
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        hf = Tokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        )
        hf.train_from_iterator(chunks(text), trainer=trainer, length=None)
        return cls(hf)

    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size()

    def unknown(self, text: str) -> set:
        return set()  # every byte is in the base alphabet

    def encode(self, text: str) -> list[int]:
        try:
            if len(text) < 1 << 17:
                return self.hf.encode(text).ids
            # Long texts: encode pieces in parallel. Pieces end at a pre-token boundary, so ids are identical.
            return [i for enc in self.hf.encode_batch(list(chunks(text))) for i in enc.ids]
        except BaseException as err:  # noqa: BLE001 - a Rust panic (a crafted tokenizer.json) is a BaseException
            raise native_failure(err, "encoding the text with the model's tokenizer", TokenizerError)

    def decode(self, ids) -> str:
        try:
            return self.hf.decode(list(ids), skip_special_tokens=False)
        except BaseException as err:  # noqa: BLE001 - see encode
            raise native_failure(err, "decoding tokens with the model's tokenizer", TokenizerError)

    def strip_unknown(self, text: str) -> str:
        return text

    def token_label(self, token_id: int) -> str:
        """The token's text: byte-level markers (Ġ, Ċ) turned back into bytes, whitespace made visible."""
        try:
            token = self.hf.id_to_token(token_id)
        except BaseException as err:  # noqa: BLE001 - see encode
            raise native_failure(err, "labelling a token of the model's tokenizer", TokenizerError)
        try:
            raw = bytes(byte_decoder()[ch] for ch in token)
        except KeyError:  # not byte-level (SentencePiece style: '▁the', '<0x0A>')
            return visible(token.replace("▁", " "))
        try:
            return visible(raw.decode("utf-8"))
        except UnicodeDecodeError:  # a fragment of a multi-byte character
            return "".join(f"<0x{b:02X}>" for b in raw)

    def to_dict(self) -> dict:
        d = {"kind": self.kind, "tokenizer_json": self.hf.to_str()}
        if self.chat_template:
            d["chat_template"] = self.chat_template
        return d


NEWLINE_THEN_TEXT = re.compile(r"\n(?=\S)")
SPACE = re.compile(r"\s")
PIECE_CHARS = 1 << 16  # distinct() reads the text in pieces of this many characters


def pieces_in_context(tokenizer, ids, new) -> list[str]:
    """The text each token of new adds after ids and the new tokens before it, as decode writes the whole: a word
    tokenizer's space before each word; a byte piece that leaves a character unfinished adds nothing, and the one
    that finishes it adds the character. Where the longer text does not start with the shorter, the token alone."""
    pieces, so_far = [], list(ids)
    before = tokenizer.decode(so_far)
    for token in new:
        so_far.append(token)
        after = tokenizer.decode(so_far)
        if after.endswith("\ufffd"):  # an unfinished character: it shows with the piece that finishes it
            pieces.append("")
            continue
        pieces.append(after[len(before):] if after.startswith(before) else tokenizer.decode([token]))
        before = after
    return pieces


def distinct(text: str, split, what: str) -> set:
    """The distinct tokens split(piece) finds in the text, read in pieces cut at whitespace (no token spans
    one), TokenizerError once there are more than MAX_VOCAB: the set never holds more than a piece's worth
    beyond the cap (a 20 MB text of unique words would otherwise keep ~0.3 GB)."""
    seen, start = set(), 0
    while start < len(text):
        cut = SPACE.search(text, start + PIECE_CHARS)
        end = len(text) if cut is None else cut.end()
        seen.update(split(text[start:end]))
        if len(seen) > MAX_VOCAB:
            raise TokenizerError(f"the text has more than {MAX_VOCAB:,} distinct {what}, and a tokenizer keeps at "
                                 f"most {MAX_VOCAB:,} (each is a row of the model's embedding): use the bpe "
                                 "tokenizer, or a shorter text.")
        start = end
    return seen


def tokenizer_bytes(tokenizer) -> int:
    """About how much memory a tokenizer keeps: ~130 bytes per char or word token beside its text (a list slot,
    a dict entry, a str and an int object), and ~200 per BPE token (measured: SmolLM2's 49,152 tokens and
    48,900 merges take 9.6 MB inside `tokenizers`)."""
    if tokenizer is None:
        return 0
    if isinstance(tokenizer, (CharTokenizer, WordTokenizer)):
        tokens = tokenizer.chars if isinstance(tokenizer, CharTokenizer) else tokenizer.words
        return sum(130 + len(t) * (4 if t and max(t) > "\xff" else 1) for t in tokens)
    return 200 * tokenizer.vocab_size


def chunks(text: str, size: int = 1 << 16):
    """The text in ~64 kB pieces, each cut after a newline that is followed by a non-space character:
    byte-level pre-tokenization always splits there, so the pieces tokenize exactly like the whole."""
    start = 0
    while start < len(text):
        match = NEWLINE_THEN_TEXT.search(text, start + size)
        end = len(text) if match is None else match.end()
        yield text[start:end]
        start = end


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-in character for each byte, inverted: 'Ġ' -> 0x20."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def build_tokenizer(kind: str, text: str, vocab_size: Optional[int] = None):
    """A tokenizer of the given kind fitted to text (vocab_size only for bpe)."""
    if kind not in TOKENIZER_KINDS:
        raise TokenizerError(f"unknown tokenizer {kind!r}; choose one of: {', '.join(TOKENIZER_KINDS)}.")
    if not text:
        raise TokenizerError("cannot build a tokenizer from empty text: provide some training text.")
    if kind == "char":
        return CharTokenizer.train(text)
    if kind == "word":
        return WordTokenizer.train(text)
    vocab_size = BPE_DEFAULT_VOCAB if vocab_size is None else vocab_size
    whole = isinstance(vocab_size, int) and not isinstance(vocab_size, bool)
    if not whole or not BPE_MIN_VOCAB <= vocab_size <= BPE_MAX_VOCAB:
        raise TokenizerError(
            f"BPE vocab size must be a whole number from {BPE_MIN_VOCAB} to {BPE_MAX_VOCAB}, got {vocab_size!r}."
        )
    return BPETokenizer.train(text, vocab_size)


def tokenizer_from_dict(d: dict, max_vocab: int = MAX_VOCAB):
    """Rebuild a tokenizer saved with to_dict(); TokenizerError if the dict is malformed (a BPE tokenizer's JSON
    is checked before the library reads it: model_core.data.tokenizer_json)."""
    kind = d.get("kind") if isinstance(d, dict) else None
    try:
        if kind == "char":
            return CharTokenizer(list(d["chars"]))
        if kind == "word":
            return WordTokenizer(list(d["words"]))
        if kind == "bpe":
            return BPETokenizer(hf_tokenizer(d["tokenizer_json"], max_vocab), d.get("chat_template"))
    except TokenizerError:
        raise
    except Exception as err:  # KeyError, TypeError, or the HF parser's own error
        raise TokenizerError(f"the saved {kind} tokenizer is damaged ({err}); retrain or re-save the model.") from None
    raise TokenizerError(f"saved tokenizer kind {kind!r} is unknown; expected one of {', '.join(TOKENIZER_KINDS)}.")


def hf_tokenizer(tokenizer_json: str, max_vocab: int = MAX_VOCAB):
    """A `tokenizers` Tokenizer from a tokenizer.json's text, checked first (TokenizerError says what is wrong;
    a panic of the library becomes one too)."""
    from tokenizers import Tokenizer

    from model_core.data.tokenizer_json import TokenizerFileError, checked_tokenizer_json

    try:
        checked = checked_tokenizer_json(tokenizer_json, max_vocab)
    except TokenizerFileError as err:
        raise TokenizerError(f"the tokenizer is damaged or not one this app reads: {err}.") from None
    try:
        return Tokenizer.from_str(checked)
    except BaseException as err:  # noqa: BLE001 - a Rust panic is a BaseException
        raise native_failure(err, "reading the tokenizer", TokenizerError)
