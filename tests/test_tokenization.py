"""Char, word and BPE tokenizers: round trips, unknown characters, display labels, serialisation."""
import json
import tracemalloc

import pytest

from model_core.data.corpora import load_corpus
from model_core.data.tokenization import (
    MAX_VOCAB,
    TokenizerError,
    UnknownTokenError,
    build_tokenizer,
    chunks,
    pieces_in_context,
    tokenizer_bytes,
    tokenizer_from_dict,
)

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n" * 20


def restored(tok):
    return tokenizer_from_dict(json.loads(json.dumps(tok.to_dict())))


def test_char_round_trip_and_sorted_vocab():
    tok = build_tokenizer("char", TEXT)
    assert tok.chars == sorted(set(TEXT)) and tok.vocab_size == len(set(TEXT))
    assert tok.decode(tok.encode(TEXT)) == TEXT
    assert restored(tok).encode(TEXT) == tok.encode(TEXT)


def test_bpe_round_trip_exact_even_for_unseen_characters():
    tok = build_tokenizer("bpe", TEXT, vocab_size=300)
    assert tok.vocab_size <= 300
    for text in (TEXT, "héllo wörld €\t  double  space\n\n", ""):
        assert tok.decode(tok.encode(text)) == text
    assert len(tok.encode(TEXT)) < len(TEXT)  # merges compress
    assert restored(tok).encode(TEXT) == tok.encode(TEXT)


@pytest.mark.slow
def test_bpe_encodes_shakespeare_in_bounded_pieces_exactly():
    """A long text is encoded as pieces of about 64 kB in parallel, so no one call's work grows with the text,
    and the pieces give the ids the whole text gives."""
    text = load_corpus("shakespeare")
    tok = build_tokenizer("bpe", text, vocab_size=512)
    pieces = list(chunks(text))
    assert len(pieces) > 1 and "".join(pieces) == text
    assert max(map(len, pieces)) < (1 << 16) + 4096
    ids = tok.encode(text)
    assert ids == tok.hf.encode(text).ids
    assert tok.decode(ids) == text


def test_word_tokenizer_keeps_specials():
    tok = build_tokenizer("word", load_corpus("toy-words"))
    assert set(tok.words) == {"what", "is", "statquest", "awesome", "<EOS>"}
    ids = tok.encode("what is statquest <EOS>")
    assert tok.decode(ids) == "what is statquest <EOS>"
    assert tok.encode("awesome<EOS>") == [tok.stoi["awesome"], tok.stoi["<EOS>"]]
    assert restored(tok).words == tok.words


@pytest.mark.parametrize("kind, prompt, more", [
    ("word", "what is statquest <EOS>", "awesome <EOS>"),  # StatQuest's answer was drawn as "<EOS>awesome<EOS>"
    ("char", "First Cit", "izen:\nBe"),
    ("bpe", "Before we", " proceed héllo €"),  # a character of several bytes split over byte pieces
])
def test_each_new_tokens_text_is_what_it_adds_in_context(kind, prompt, more):
    """The prompt's text and each generated token's piece, joined, are the whole decoded text."""
    tok = build_tokenizer(kind, load_corpus("toy-words") if kind == "word" else TEXT, vocab_size=300)
    ids, new = tok.encode(prompt), tok.encode(prompt + " " + more if kind == "word" else prompt + more)
    new = new[len(ids):]
    pieces = pieces_in_context(tok, ids, new)
    assert len(pieces) == len(new) and tok.decode(ids) + "".join(pieces) == tok.decode(ids + new)
    if kind == "word":
        assert pieces == [" awesome", " <EOS>"]


def test_unknown_characters_are_named():
    tok = build_tokenizer("char", "abc ")
    with pytest.raises(UnknownTokenError) as info:
        tok.encode("abcé€!")
    assert info.value.unknown == {"é", "€", "!"}
    assert "'é'" in str(info.value) and "'€'" in str(info.value)
    assert tok.strip_unknown("a é b!") == "a  b"
    with pytest.raises(UnknownTokenError, match="'zebra'"):
        build_tokenizer("word", "a b").encode("a zebra")


def test_token_labels_make_whitespace_visible():
    char = build_tokenizer("char", "a b\nc")
    assert [char.token_label(i) for i in range(char.vocab_size)] == ["⏎", "␣", "a", "b", "c"]
    bpe = build_tokenizer("bpe", TEXT, vocab_size=300)
    labels = [bpe.token_label(i) for i in bpe.encode(" speak.\n")]
    assert "".join(labels) == "␣speak.⏎"
    assert not any("Ġ" in label or "Ċ" in label for label in labels)


def test_bad_requests_raise_clear_errors():
    with pytest.raises(TokenizerError, match="char, word, bpe"):
        build_tokenizer("sentencepiece", TEXT)
    with pytest.raises(TokenizerError, match="256 to 4096"):
        build_tokenizer("bpe", TEXT, vocab_size=100)
    with pytest.raises(TokenizerError, match="empty"):
        build_tokenizer("char", "")
    with pytest.raises(TokenizerError, match="damaged"):
        tokenizer_from_dict({"kind": "bpe", "tokenizer_json": "{not json"})


# ---------------------------------------------------------------- vocabulary caps and what a tokenizer keeps

def distinct_words(n: int) -> str:
    return " ".join(f"w{i:07d}" for i in range(n))


@pytest.mark.parametrize("kind, text, what", [
    ("word", distinct_words(MAX_VOCAB + 1), "words"),
    ("char", "".join(chr(0x4E00 + i % 20_000) + chr(0x20000 + i) for i in range(MAX_VOCAB)), "characters"),
])
def test_vocabularies_over_the_cap_are_refused_naming_it(kind, text, what):
    with pytest.raises(TokenizerError, match=f"more than 65,536 distinct {what}, and a tokenizer keeps at most 65,536"):
        build_tokenizer(kind, text)


def test_a_vocabulary_at_the_cap_is_built():
    assert build_tokenizer("word", distinct_words(MAX_VOCAB)).vocab_size == MAX_VOCAB


@pytest.mark.slow
def test_refusing_a_text_of_unique_words_keeps_memory_bounded():
    """20 MB of 2.5 million distinct words used to keep ~0.3 GB of vocabulary; the refusal reads it in pieces."""
    text = distinct_words(2_500_000)[:20_000_000]
    tracemalloc.start()
    try:
        with pytest.raises(TokenizerError, match="distinct words"):
            build_tokenizer("word", text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 30_000_000, f"{peak / 1e6:.0f} MB"


@pytest.mark.parametrize("kind, text", [("word", distinct_words(20_000)), ("char", TEXT),
                                        ("word", "é" * 50 + " " + "€" * 30 + " plain")])
def test_tokenizer_bytes_is_what_the_vocabulary_takes(kind, text):
    tracemalloc.start()
    try:
        tokenizer = build_tokenizer(kind, text)
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    estimate = tokenizer_bytes(tokenizer)
    assert 0.6 * kept <= estimate <= 2.0 * kept + 2_000, (estimate, kept)
