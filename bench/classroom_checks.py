"""Which model produced a result: structural fingerprints and whole-answer digests of the analysis endpoints.

A fingerprint keeps only what the model's shape and tokenizer decide (head count, token labels, vocabulary),
never floating-point values, so the same session's results always match and another shipped model's never do.
A digest hashes the whole answer: two models that differ only in their weights (own-model mode) tell apart
by it, and a session on a model of its own must never get the unmodified shipped model's answer."""
import base64
import hashlib
import html
import json
import re
import threading
from pathlib import Path

from gradio_client import Client

ANALYSIS = ("attention", "residual", "next_token", "compare")
MODELS = ("shakespeare", "first-names")  # the app's default model first
ASSETS = Path(__file__).resolve().parent.parent / "explorer" / "assets" / "models"
GENERATED = re.compile(r"<pre class='te-gen'><b>.*?</b>(.*?)</pre>", re.S)


def vocabularies() -> dict[str, set[str]]:
    """{shipped model: its characters}, read from the checkpoints' config.json (character tokenizers only)."""
    out = {}
    for name in MODELS:
        tokenizer = json.loads((ASSETS / name / "config.json").read_text()).get("tokenizer", {})
        if tokenizer.get("kind") == "char":
            out[name] = set(tokenizer["chars"])
    return out


VOCABULARIES = vocabularies()


def _figure(value: dict) -> dict:
    return json.loads(value["plot"])


def _length(array) -> int:
    """Length of a Plotly JSON array: a list, or a typed array {"dtype": "f4", "bdata": base64}."""
    if isinstance(array, dict):
        itemsize = int(re.sub(r"\D", "", array["dtype"]) or 1)
        return len(base64.b64decode(array["bdata"])) // itemsize
    return len(array)


def generating_model(texts: list[str]) -> str | None:
    """The shipped model with the smallest vocabulary that holds every generated character."""
    chars = set("".join(texts))
    fits = [name for name, vocab in VOCABULARIES.items() if chars <= vocab]
    return min(fits, key=lambda name: len(VOCABULARIES[name])) if fits else None


def shown_text(label: str) -> str:
    """A token label's text: whitespace markers (model_core.data.tokenization.visible) back to whitespace."""
    return label.replace("⏎", "\n").replace("␣", " ").replace("⇥", "\t").replace("␍", "\r")


def fingerprint(endpoint: str, result) -> tuple:
    if endpoint == "attention":  # one statistics row per head; the selected head's key-axis token labels
        return len(result[4]["data"]), tuple(_figure(result[1])["data"][0]["x"])
    if endpoint == "residual":  # the residual heatmap: positions (token labels) by layers
        heatmap = next(t for t in _figure(result[3])["data"] if t["type"] == "heatmap")
        return tuple(heatmap["x"]), _length(heatmap["y"])
    if endpoint == "next_token":  # the shipped model whose vocabulary holds the most likely tokens shown
        return (generating_model([shown_text(label) for label in _figure(result[0])["data"][0]["x"]]),)
    if endpoint == "compare":
        texts = [html.unescape(t) for t in GENERATED.findall(result)]
        return len(texts), generating_model(texts)
    raise ValueError(f"no fingerprint for /{endpoint}")


def answer_digest(result) -> str:
    """A hash of the whole answer as JSON: the same model and inputs give the same digest, another model's
    weights another one (the analyses are deterministic: Compare is seeded)."""
    text = json.dumps(result, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def reference_fingerprints(url: str, arguments) -> tuple[dict[str, dict[str, tuple]], dict[str, dict[str, str]]]:
    """({model: {endpoint: fingerprint}}, {model: {endpoint: answer digest}}) from one session per shipped
    model, before the class starts.

    arguments(endpoint, model) gives the call's arguments. Raises if a fingerprint cannot tell the models
    apart, since cross-talk would then go unseen."""
    refs, digests = {}, {}
    for model in MODELS:
        client = Client(url, verbose=False)
        try:
            client.predict(model, api_name="/use_shipped_model")
            results = {e: client.predict(*arguments(e, model), api_name=f"/{e}") for e in ANALYSIS}
        finally:
            client.close()
        refs[model] = {e: fingerprint(e, r) for e, r in results.items()}
        digests[model] = {e: answer_digest(r) for e, r in results.items()}
        if refs[model]["compare"][1] != model:
            raise RuntimeError(f"{model}'s own generations look like {refs[model]['compare'][1]}'s")
    for e in ANALYSIS:
        if len({refs[m][e] for m in MODELS}) < len(MODELS):
            raise RuntimeError(f"/{e} gives the same fingerprint for {', '.join(MODELS)}")
    return refs, digests


class Answers:
    """Every session's answer digests. A session must always get its own answer back (its model and inputs do
    not change). With models of their own (shipped given), no session may get the unmodified shipped model's
    answer, which the server would serve from its shared cache, and no two sessions the same answer."""

    def __init__(self, shipped: dict[str, str] | None = None):
        self.shipped = shipped  # {endpoint: digest of the shipped model's answer}; None: sessions share a model
        self._lock = threading.Lock()
        self._first: dict[tuple[str, str], str] = {}  # (session, endpoint) -> that session's first digest
        self._owner: dict[tuple[str, str], str] = {}  # (endpoint, digest) -> the first session given it

    def problems(self, who: str, endpoint: str, digest: str) -> list[tuple[str, str]]:
        """[(kind, what)] for this answer, kind "crosstalk" or "shipped"; [] when it is as it should be."""
        found = []
        with self._lock:
            if self._first.setdefault((who, endpoint), digest) != digest:
                found.append(("crosstalk", f"/{endpoint} answered differently from this session's first answer"))
            if self.shipped is None:
                return found
            if digest == self.shipped.get(endpoint):
                return found + [("shipped", f"/{endpoint} gave the unmodified shipped model's answer")]
            owner = self._owner.setdefault((endpoint, digest), who)
            if owner != who:
                found.append(("crosstalk", f"/{endpoint} gave the same answer as {owner}, on another model"))
        return found


STATUS = re.compile(r"\*\*(\w+)\*\* · step \*\*([\d,]+) / ([\d,]+)\*\*")


def run_progress(status: str) -> tuple[str, int, int] | None:
    """(state, step, total steps) from the Train tab's status line, or None before a run has steps to show."""
    found = STATUS.search(status)
    if found is None:
        return None
    return found[1], int(found[2].replace(",", "")), int(found[3].replace(",", ""))
