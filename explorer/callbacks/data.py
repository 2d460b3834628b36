"""Data tab: choose a corpus or upload text, pick a tokenizer, see what the model will be trained on."""
import functools
from collections import Counter
from pathlib import Path

import torch

from explorer.callbacks import validation
from explorer.callbacks.task_data import choose_task, is_task, prepared_task, task_data_view
from explorer.common.controls import DEFAULT_VAL_SPLIT
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.figures.data import token_index_figure
from explorer.state.session import Session
from explorer.state.workspace import DataChoice
from explorer.teaching import captions
from model_core.data.corpora import CORPORA, load_corpus, read_user_file, validate_user_text
from model_core.data.dataset import DEFAULT_VAL_FRACTION, compact, get_batch, split_by_val_fraction, token_tensor
from model_core.data.tasks.choices import CHOICES
from model_core.data.tokenization import (
    BPE_DEFAULT_VOCAB,
    BPE_MAX_VOCAB,
    BPE_MIN_VOCAB,
    TOKENIZER_KINDS,
    build_tokenizer,
)

SHORT_FOR_BPE = 30_000  # characters: a longer text has merges for any BPE size (toy-words': 279 of 512)
VOCAB_ROWS = 300  # longest vocabulary table shown
BATCH_SHOWN, WINDOW_SHOWN = 4, 8
SAMPLE_CHARS = 600  # the text itself is not kept in the session: this much of its start is, for display
# The Data tab's "Validation split" choices: (label, value) -> share of the tokens held out.
VAL_SPLITS = {"10%": DEFAULT_VAL_FRACTION, "none": 0.0}


def val_fraction(val_split) -> float:
    """The share of tokens held out for a Validation split choice (an empty choice means the default)."""
    val_split = DEFAULT_VAL_SPLIT if val_split in (None, "") else val_split
    return VAL_SPLITS[validation.choice(val_split, "Validation split", tuple(VAL_SPLITS))]


@functools.lru_cache(maxsize=8)
def prepared(name: str, kind: str, bpe_vocab: int, held_out: float = DEFAULT_VAL_FRACTION):
    """Built-in corpora are shared by all sessions: tokenised once, never modified."""
    return _prepare(load_corpus(name), kind, bpe_vocab, held_out)


def _prepare(text: str, kind: str, bpe_vocab: int, held_out: float = DEFAULT_VAL_FRACTION):
    tokenizer = text_tokenizer(text, kind, bpe_vocab)
    ids = compact(token_tensor(tokenizer.encode(text)), tokenizer.vocab_size)
    return (tokenizer, *split_by_val_fraction(ids, held_out))


def text_tokenizer(text: str, kind: str, bpe_vocab: int):
    """The tokenizer a text is prepared with (a BPE of bpe_vocab tokens; the others ignore it)."""
    return build_tokenizer(kind, text, int(bpe_vocab) if kind == "bpe" else None)


def read_upload(path) -> str:
    """The uploaded file as text, never reading more than the upload limit (+1 byte to notice a longer one)."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"The uploaded file {p.name} is gone from the server: upload it again.")
    size = p.stat().st_size
    if size > LIMITS.max_upload_bytes:
        raise UserError(f"{p.name} is {size / 1e6:.1f} MB; the limit is {LIMITS.max_upload_mb:g} MB.")
    data = read_user_file(p, LIMITS.max_upload_bytes)  # bounded even if the file grew since stat
    return validate_user_text(data, max_bytes=LIMITS.max_upload_bytes, min_chars=20)


def tokenizer_choice(kind, bpe_vocab) -> tuple[str, int]:
    """The Data tab's tokenizer and BPE size, checked (an empty choice means the default)."""
    kind = validation.choice(kind or "char", "Tokenizer", TOKENIZER_KINDS)
    return kind, validation.whole_number(bpe_vocab, "BPE vocabulary size", minimum=BPE_MIN_VOCAB,
                                         maximum=BPE_MAX_VOCAB, default=BPE_DEFAULT_VOCAB)


def choices_vocab_size(corpus, kind, bpe_vocab) -> int:
    """The vocabulary size choose_data would give these Data-tab choices, without tokenizing the text."""
    if is_task(corpus):
        return prepared_task(corpus)[0].vocab_size
    if not isinstance(corpus, str) or corpus not in CORPORA:
        raise UserError(f"Pick a corpus ({', '.join([*CORPORA, *CHOICES])}) or upload a .txt file.")
    return corpus_vocab_size(corpus, *tokenizer_choice(kind, bpe_vocab))


@functools.lru_cache(maxsize=64)
def corpus_vocab_size(corpus: str, kind: str, bpe_vocab: int) -> int:
    """A built-in corpus's vocabulary for a tokenizer: its distinct characters or words (at most 0.6 s, once);
    a BPE reaches the chosen size on any text longer than SHORT_FOR_BPE characters (measured: 4,096 on
    first-names' 36,122), and a shorter one is trained (under 0.1 s)."""
    text = load_corpus(corpus)
    if kind == "bpe" and len(text) > SHORT_FOR_BPE:
        return bpe_vocab
    return text_tokenizer(text, kind, bpe_vocab).vocab_size


def choose_data(session: Session, corpus: str, upload, kind: str, bpe_vocab,
                val_split=DEFAULT_VAL_SPLIT) -> DataChoice:
    """Prepare (and remember in the session) the text the Train tab will use."""
    held_out = val_fraction(val_split)
    kind, bpe_vocab = tokenizer_choice(kind, bpe_vocab)
    if not upload and is_task(corpus):
        return choose_task(session, corpus)
    if upload:
        text = read_upload(upload)
        name = Path(upload).name
        tokenizer, train, val = _prepare(text, kind, bpe_vocab, held_out)
    else:
        if not isinstance(corpus, str) or corpus not in CORPORA:
            raise UserError(f"Pick a corpus ({', '.join([*CORPORA, *CHOICES])}) or upload a .txt file.")
        text, name = load_corpus(corpus), corpus
        tokenizer, train, val = prepared(corpus, kind, bpe_vocab, held_out)
    choice = DataChoice(name, text[:SAMPLE_CHARS], len(text), tokenizer, train, val, uploaded=bool(upload))
    if choice.nbytes > LIMITS.session_data_mb * 1e6:
        raise UserError(f"{name} makes {choice.nbytes / 1e6:.0f} MB of token ids and vocabulary; a session may keep "
                        f"{LIMITS.session_data_mb:g} MB. Use a shorter text (or the char or bpe tokenizer).")
    session.workspace.data = choice
    return choice


def data_view(session: Session, corpus: str, upload=None, kind: str = "char", bpe_vocab=BPE_DEFAULT_VOCAB,
              val_split=DEFAULT_VAL_SPLIT):
    """-> summary md, vocabulary rows, sample text, token-index figure, split md, batch rows."""
    d = choose_data(session, corpus, upload, kind, bpe_vocab, val_split)
    if d.task is not None:
        return task_data_view(d)
    tok = d.tokenizer
    n_tokens = len(d.train) + len(d.val)
    counts = Counter(torch.cat([d.train, d.val])[:2_000_000].tolist())
    vocab_rows = [[i, tok.token_label(i), counts.get(i, 0)] for i in range(min(tok.vocab_size, VOCAB_ROWS))]
    summary = (f"**{d.name}**: {d.n_chars:,} characters → **{n_tokens:,} tokens** with the {kind} tokenizer; "
               f"vocabulary of **{tok.vocab_size}** tokens"
               + (f" (table shows the first {VOCAB_ROWS})" if tok.vocab_size > VOCAB_ROWS else "") + ".")
    first = d.train[:50].tolist()
    split = split_text(d)
    first_labels = [tok.token_label(i) for i in first]
    split += "\n\n**Token indices:** " + captions.token_index_caption(first, first_labels)
    return (summary, vocab_rows, d.sample, token_index_figure(first, first_labels), split, batch_rows(d))


def split_text(d: DataChoice) -> str:
    if not len(d.val):
        return (f"**No validation split**: all **{len(d.train):,}** tokens are training text, and the Train tab "
                "evaluates the model **on the training text** itself: its loss says how well the model learnt "
                "this text, not whether it generalises. (The only choice for a one-sentence corpus.)")
    share = len(d.val) / (len(d.train) + len(d.val))
    return (f"Training split: **{len(d.train):,}** tokens (first {1 - share:.0%}). Validation split: "
            f"**{len(d.val):,}** tokens (last {share:.0%}, never trained on: its loss tells whether the model "
            "generalises).")


def batch_rows(d: DataChoice) -> list[list]:
    """One small batch as aligned (input → target) pairs: the target is the input shifted by one token."""
    gen = torch.Generator().manual_seed(0)
    window = min(WINDOW_SHOWN, len(d.train) - 1)
    x, y = get_batch(d.train, window, BATCH_SHOWN, gen)
    label = d.tokenizer.token_label
    rows = []
    for b in range(BATCH_SHOWN):
        for t in range(window):
            context = " ".join(label(i) for i in x[b, : t + 1].tolist())
            rows.append([b, t, context, label(int(y[b, t]))])
    return rows
