"""Data tab: choose a corpus or upload text, pick a tokenizer, see what the model will be trained on."""
import functools
from collections import Counter
from pathlib import Path

import torch

from model_core.corpora import CORPORA, load_corpus, validate_user_text
from model_core.data import get_batch, token_tensor, train_val_split
from model_core.tokenization import build_tokenizer

from ..errors import UserError
from ..figures.data import token_index_figure
from ..limits import LIMITS
from ..session import DataChoice, Session

VOCAB_ROWS = 300  # longest vocabulary table shown
BATCH_SHOWN, WINDOW_SHOWN = 4, 8


@functools.lru_cache(maxsize=8)
def prepared(name: str, kind: str, bpe_vocab: int):
    """Built-in corpora are shared by all sessions: tokenised once, never modified."""
    return _prepare(load_corpus(name), kind, bpe_vocab)


def _prepare(text: str, kind: str, bpe_vocab: int):
    tokenizer = build_tokenizer(kind, text, int(bpe_vocab) if kind == "bpe" else None)
    train, val = train_val_split(token_tensor(tokenizer.encode(text)))
    return tokenizer, train, val


def read_upload(path) -> str:
    p = Path(path)
    if p.stat().st_size > LIMITS.max_upload_bytes:
        raise UserError(f"{p.name} is {p.stat().st_size / 1e6:.1f} MB; the limit is {LIMITS.max_upload_mb:g} MB.")
    return validate_user_text(p.read_bytes(), max_bytes=LIMITS.max_upload_bytes, min_chars=20)


def choose_data(session: Session, corpus: str, upload, kind: str, bpe_vocab) -> DataChoice:
    """Prepare (and remember in the session) the text the Train tab will use."""
    if upload:
        text = read_upload(upload)
        name = Path(upload).name
        tokenizer, train, val = _prepare(text, kind, int(bpe_vocab or 512))
    else:
        if corpus not in CORPORA:
            raise UserError(f"Pick a corpus ({', '.join(CORPORA)}) or upload a .txt file.")
        text, name = load_corpus(corpus), corpus
        tokenizer, train, val = prepared(corpus, kind, int(bpe_vocab or 512))
    session.data = DataChoice(name, text, tokenizer, train, val)
    return session.data


def data_view(session: Session, corpus: str, upload, kind: str, bpe_vocab):
    """-> summary md, vocabulary rows, sample text, token-index figure, split md, batch rows."""
    d = choose_data(session, corpus, upload, kind, bpe_vocab)
    tok = d.tokenizer
    n_tokens = len(d.train) + len(d.val)
    counts = Counter(torch.cat([d.train, d.val])[:2_000_000].tolist())
    vocab_rows = [[i, tok.token_label(i), counts.get(i, 0)] for i in range(min(tok.vocab_size, VOCAB_ROWS))]
    summary = (f"**{d.name}**: {len(d.text):,} characters → **{n_tokens:,} tokens** with the {kind} tokenizer; "
               f"vocabulary of **{tok.vocab_size}** tokens"
               + (f" (table shows the first {VOCAB_ROWS})" if tok.vocab_size > VOCAB_ROWS else "") + ".")
    first = d.train[:50].tolist()
    split = (f"Training split: **{len(d.train):,}** tokens (first 90%). Validation split: **{len(d.val):,}** tokens "
             "(last 10%, never trained on: its loss tells whether the model generalises).")
    return (summary, vocab_rows, d.text[:600], token_index_figure(first, [tok.token_label(i) for i in first]),
            split, batch_rows(d))


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
