"""A Hugging Face tokenizer.json, checked before the `tokenizers` library reads it.

The library trusts its file. A padding length of 10^12 makes it abort the whole process (Rust's out-of-memory
handler: no exception, the server is gone); a post-processor naming a special token it does not define
panics on every encode; a 'Precompiled' normalizer with a damaged table panics while loading. So a tokenizer
from a file is handed on only when it is a BPE tokenizer built from the parts byte-level (GPT-2, Llama 3,
Qwen2, SmolLM2) and SentencePiece-style (Llama 2, TinyLlama) tokenizers use, with every count and number in
range and every special token a post-processor names defined. Its padding and truncation, which this app never
uses, are dropped. A tokenizer that passes may still fail inside the library on some text (a Split regex that
backtracks hits Oniguruma's retry limit and panics): model_core.data.native_errors makes that a sentence."""
import json
from typing import Optional

MAX_TEXT = 1_000  # characters of a pattern, a replacement, a special token, one vocabulary entry
MAX_PARTS = 16  # parts of a Sequence, tokens of a template
MAX_DEPTH = 4  # Sequences inside Sequences
MAX_MERGES_PER_TOKEN = 2  # a BPE model has fewer merges than tokens; room for files that list extra ones
BYTE_LEVEL = ("add_prefix_space", "trim_offsets", "use_regex")
METASPACE = ("replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep")
PARTS = {  # where in the file -> {type: its fields besides "type"}
    "normalizer": {"NFC": (), "NFD": (), "NFKC": (), "NFKD": (), "Lowercase": (), "StripAccents": (),
                   "Strip": ("strip_left", "strip_right"), "Replace": ("pattern", "content"), "Prepend": ("prepend",),
                   "Sequence": ("normalizers",)},
    "pre_tokenizer": {"ByteLevel": BYTE_LEVEL, "Split": ("pattern", "behavior", "invert"), "Metaspace": METASPACE,
                      "Digits": ("individual_digits",), "Whitespace": (), "WhitespaceSplit": (),
                      "Punctuation": ("behavior",), "Sequence": ("pretokenizers",)},
    "decoder": {"ByteLevel": BYTE_LEVEL, "ByteFallback": (), "Fuse": (), "Strip": ("content", "start", "stop"),
                "Replace": ("pattern", "content"), "Metaspace": METASPACE, "Sequence": ("decoders",)},
    "post_processor": {"ByteLevel": BYTE_LEVEL, "TemplateProcessing": ("single", "pair", "special_tokens"),
                       "RobertaProcessing": ("sep", "cls", "trim_offsets", "add_prefix_space"),
                       "BertProcessing": ("sep", "cls"), "Sequence": ("processors",)},
}
SEQUENCES = {"normalizers", "pretokenizers", "decoders", "processors"}
BPE_FIELDS = {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
              "byte_fallback", "ignore_merges", "vocab", "merges"}
TOP_FIELDS = {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor",
              "decoder", "model"}
ADDED_TOKEN_FIELDS = {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"}


class TokenizerFileError(ValueError):
    """The tokenizer.json is not one this app hands to the library; the message says which part and why."""


def checked_tokenizer_json(text: str, max_vocab: int) -> str:
    """The tokenizer.json text, refused (TokenizerFileError) unless every part is one this app reads and every
    count within max_vocab tokens; returned without its padding and truncation."""
    try:
        tree = json.loads(text)
    except (ValueError, RecursionError):
        raise TokenizerFileError("tokenizer.json is not valid JSON") from None
    if not isinstance(tree, dict) or not isinstance(tree.get("model"), dict):
        raise TokenizerFileError("tokenizer.json has no model: it is not a Hugging Face tokenizer file")
    unknown = sorted(set(tree) - TOP_FIELDS)
    if unknown:
        raise TokenizerFileError(f"tokenizer.json has a part this app does not read ({unknown[0][:40]!r})")
    ids = check_model(tree["model"], max_vocab)
    ids |= check_added_tokens(tree.get("added_tokens") or [], max_vocab)
    for kind in PARTS:
        if tree.get(kind) is not None:
            check_part(tree[kind], kind, ids)
    tree["padding"] = tree["truncation"] = None  # the app never pads or truncates; a padding of 10^12 aborts
    return json.dumps(tree, ensure_ascii=False)


def check_model(model: dict, max_vocab: int) -> set[int]:
    """A BPE model's fields; -> the ids of its vocabulary."""
    if model.get("type", "BPE") != "BPE":
        raise TokenizerFileError(f"tokenizer.json's model is {str(model.get('type'))[:40]!r}; this app reads BPE "
                                 "tokenizers only")
    unknown = sorted(set(model) - BPE_FIELDS)
    if unknown:
        raise TokenizerFileError(f"tokenizer.json's BPE model has a setting this app does not read "
                                 f"({unknown[0][:40]!r})")
    vocab, merges = model.get("vocab"), model.get("merges", [])
    if not isinstance(vocab, dict) or not isinstance(merges, list):
        raise TokenizerFileError("tokenizer.json's model has no vocabulary (vocab) and merges")
    if len(vocab) > max_vocab or len(merges) > MAX_MERGES_PER_TOKEN * max_vocab:
        raise TokenizerFileError(f"tokenizer.json has {len(vocab):,} tokens and {len(merges):,} merges; this app "
                                 f"reads at most {max_vocab:,} tokens")
    if not all(isinstance(token, str) and len(token) <= MAX_TEXT and whole(i, max_vocab) for token, i in vocab.items()):
        raise TokenizerFileError(f"tokenizer.json's vocabulary must map texts to ids below {max_vocab:,}")
    if not all(merge_ok(m) for m in merges):
        raise TokenizerFileError("tokenizer.json's merges must be pairs of tokens")
    dropout = model.get("dropout")
    if dropout is not None and not (isinstance(dropout, (int, float)) and 0 <= dropout <= 1):
        raise TokenizerFileError("tokenizer.json's dropout must be between 0 and 1")
    for key in sorted(BPE_FIELDS - {"type", "vocab", "merges", "dropout"}):
        scalar(model.get(key), f"model.{key}")
    return set(vocab.values())


def check_added_tokens(added: list, max_vocab: int) -> set[int]:
    if not isinstance(added, list) or len(added) > max_vocab:
        raise TokenizerFileError(f"tokenizer.json's added_tokens must be a list of at most {max_vocab:,} tokens")
    for token in added:
        if not isinstance(token, dict) or set(token) - ADDED_TOKEN_FIELDS or not whole(token.get("id"), max_vocab) \
                or not isinstance(token.get("content"), str) or not 0 < len(token["content"]) <= MAX_TEXT:
            raise TokenizerFileError(f"tokenizer.json's added_tokens must each have an id below {max_vocab:,} and "
                                     f"a text of 1 to {MAX_TEXT:,} characters")
        for key in ADDED_TOKEN_FIELDS - {"id", "content"}:
            if not isinstance(token.get(key, False), bool):
                raise TokenizerFileError(f"tokenizer.json's added token {key} must be true or false")
    return {token["id"] for token in added}


def check_part(part, kind: str, ids: set[int], depth: int = 0) -> None:
    """One normalizer, pre-tokenizer, decoder or post-processor (a Sequence: each of its parts)."""
    kinds = PARTS[kind]
    what = kind.replace("_", "-")
    name = part.get("type") if isinstance(part, dict) else part
    if not isinstance(name, str) or name not in kinds:
        raise TokenizerFileError(f"tokenizer.json's {what} {str(name)[:40]!r} is not one this app reads "
                                 f"({', '.join(kinds)})")
    fields = kinds[part["type"]]
    unknown = sorted(set(part) - set(fields) - {"type"})
    if unknown:
        raise TokenizerFileError(f"tokenizer.json's {what} {part['type']} has a setting this app does not read "
                                 f"({unknown[0][:40]!r})")
    for key in fields:
        value = part.get(key)
        if key in SEQUENCES:
            if depth >= MAX_DEPTH or not isinstance(value, list) or len(value) > MAX_PARTS:
                raise TokenizerFileError(f"tokenizer.json's {what} Sequence must list at most {MAX_PARTS} parts, "
                                         f"nested at most {MAX_DEPTH} deep")
            for inner in value:
                check_part(inner, kind, ids, depth + 1)
        elif key == "pattern":
            check_pattern(value, what)
        elif key in ("sep", "cls"):
            if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
                    and len(value[0]) <= MAX_TEXT and value[1] in ids):
                raise TokenizerFileError(f"tokenizer.json's {what} {key} must be a token and an id of the vocabulary")
        elif key in ("single", "pair", "special_tokens"):
            pass
        else:
            scalar(value, f"{what} {key}")
    if part["type"] == "TemplateProcessing":
        check_template_processing(part, ids)


def check_pattern(value, what: str) -> None:
    if not (isinstance(value, dict) and len(value) == 1 and set(value) <= {"String", "Regex"}
            and isinstance(next(iter(value.values())), str) and len(next(iter(value.values()))) <= MAX_TEXT):
        raise TokenizerFileError(f"tokenizer.json's {what} pattern must be one String or Regex of at most "
                                 f"{MAX_TEXT:,} characters")


def check_template_processing(part: dict, ids: set[int]) -> None:
    """Every special token the templates name is defined, with ids of the vocabulary (the library panics on
    every encode otherwise)."""
    special = part.get("special_tokens") or {}
    if not isinstance(special, dict) or len(special) > MAX_PARTS:
        raise TokenizerFileError(f"tokenizer.json's post-processor must define at most {MAX_PARTS} special tokens")
    for name, entry in special.items():
        if not (isinstance(entry, dict) and entry.get("id") == name and isinstance(entry.get("ids"), list)
                and isinstance(entry.get("tokens"), list) and 0 < len(entry["ids"]) == len(entry["tokens"]) <= MAX_PARTS
                and all(i in ids for i in entry["ids"]) and all(isinstance(t, str) for t in entry["tokens"])):
            raise TokenizerFileError(f"tokenizer.json's post-processor special token {str(name)[:40]!r} must have "
                                     "as many ids (of the vocabulary) as tokens")
    for key in ("single", "pair"):
        pieces = part.get(key)
        if not isinstance(pieces, list) or len(pieces) > MAX_PARTS:
            raise TokenizerFileError(f"tokenizer.json's post-processor {key} must be a list of at most {MAX_PARTS}")
        for piece in pieces:
            name = template_piece(piece)
            if name is not None and name not in special:
                raise TokenizerFileError(f"tokenizer.json's post-processor uses the special token {name[:40]!r} "
                                         "without defining it")


def template_piece(piece) -> Optional[str]:
    """The special token a TemplateProcessing piece names (None for a sequence $A / $B); refused if malformed."""
    if isinstance(piece, dict) and len(piece) == 1:
        (kind, body), = piece.items()
        if kind in ("Sequence", "SpecialToken") and isinstance(body, dict) and set(body) <= {"id", "type_id"} \
                and isinstance(body.get("id"), str) and whole(body.get("type_id", 0), MAX_PARTS):
            if kind == "SpecialToken":
                return body["id"]
            if body["id"] in ("A", "B"):
                return None
    raise TokenizerFileError("tokenizer.json's post-processor template has a piece this app does not read")


def scalar(value, where: str) -> None:
    """A plain setting: null, true/false, a short text or a small whole number."""
    if value is None or isinstance(value, bool) or (isinstance(value, str) and len(value) <= MAX_TEXT):
        return
    if not whole(value, MAX_TEXT + 1):
        raise TokenizerFileError(f"tokenizer.json's {where} must be true/false, a short text or a whole number up "
                                 f"to {MAX_TEXT:,}")


def whole(value, below: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < below


def merge_ok(merge) -> bool:
    """'a b' (older files) or ['a', 'b']."""
    if isinstance(merge, str):
        return len(merge) <= 2 * MAX_TEXT + 1 and len(merge.split(" ")) == 2
    return isinstance(merge, list) and len(merge) == 2 and all(isinstance(m, str) and len(m) <= MAX_TEXT for m in merge)
