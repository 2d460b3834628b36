"""Built-in corpora load offline in the expected format; user text is checked with clear messages."""
import pytest

from model_core.data.corpora import (
    CORPORA,
    TINY_SHAKESPEARE_CHARS,
    CorpusError,
    load_corpus,
    load_text_file,
    min_text_chars,
    validate_user_text,
)


@pytest.mark.slow
def test_every_corpus_loads():
    for name in CORPORA:
        text = load_corpus(name)
        assert isinstance(text, str) and len(text) > 10


def test_unknown_corpus_names_the_choices():
    with pytest.raises(CorpusError, match="shakespeare"):
        load_corpus("hamlet.txt")


@pytest.mark.slow
def test_shakespeare_is_tiny_shakespeare_format():
    text = load_corpus("shakespeare")
    assert text.startswith("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n")
    assert abs(len(text) - TINY_SHAKESPEARE_CHARS) < 5000
    assert text.endswith("\n\n") and "\n\n\n" not in text
    assert not set("_*#[]\\") & set(text), "markdown or stage-direction markers leaked through"
    lines = set(text.splitlines())
    assert not {"Exit", "Exeunt", "Enter MENENIUS AGRIPPA"} & lines
    assert "MENENIUS:\n" in text
    for speech in text.split("\n\n")[:2000]:
        speaker, *lines = speech.split("\n")
        assert speaker.endswith(":") and lines, speech


@pytest.mark.slow
def test_shakespeare_full_holds_every_play_and_is_cached():
    full = load_corpus("shakespeare-full")
    assert full.startswith(load_corpus("shakespeare")[:1000])
    assert len(full) > 4_000_000
    assert load_corpus("shakespeare-full") is full  # lru_cache: no second conversion


@pytest.mark.slow
@pytest.mark.parametrize("name", ["first-names", "surnames"])
def test_names_are_lowercase_one_per_line_unique(name):
    lines = load_corpus(name).splitlines()
    assert len(lines) > 1000 and len(lines) == len(set(lines))
    assert all(line.isalpha() and line == line.lower() for line in lines[:500])
    assert lines != sorted(lines)  # shuffled...
    assert load_corpus(name).splitlines()[:20] == lines[:20]  # ...with a fixed seed


def test_toy_texts():
    assert "what is statquest <EOS> awesome <EOS>" in load_corpus("toy-words")
    assert "statquest is what <EOS> awesome <EOS>" in load_corpus("toy-words")
    assert load_corpus("welcome") == "Welcome to the world of AI"


@pytest.mark.parametrize("data, message", [
    (b"", "empty"),
    ("   \n", "empty"),
    (b"abc\x00def" * 10, "binary"),
    (b"\xff\xfe\xfa caf\xe9" * 10, "not UTF-8"),
    ("x" * 101, "limit"),
    ("short", "at least"),
])
def test_user_text_rejections_say_why(data, message):
    with pytest.raises(CorpusError, match=message):
        validate_user_text(data, max_bytes=100, min_chars=10)


def test_user_text_accepts_utf8_bytes():
    assert validate_user_text("héllo wörld".encode("utf-8"), min_chars=5) == "héllo wörld"


def test_text_file(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("to be or not to be\n" * 50, encoding="utf-8")
    assert load_text_file(path, block_size=16).startswith("to be")
    with pytest.raises(CorpusError, match="block size"):
        load_text_file(path, block_size=len(path.read_text()))
    with pytest.raises(CorpusError, match="no such file"):
        load_text_file(tmp_path / "missing.txt")
    assert min_text_chars(9) == 100
