"""Which model produced a result: structural fingerprints of the analysis endpoints' outputs.

A fingerprint keeps only what the model's shape and tokenizer decide (head count, token labels, vocabulary),
never floating-point values, so the same session's results always match and another model's never do."""
import base64
import html
import json
import re
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


def fingerprint(endpoint: str, result) -> tuple:
    if endpoint == "attention":  # one statistics row per head; the selected head's key-axis token labels
        return len(result[4]["data"]), tuple(_figure(result[1])["data"][0]["x"])
    if endpoint == "residual":  # the residual heatmap: positions (token labels) by layers
        heatmap = next(t for t in _figure(result[3])["data"] if t["type"] == "heatmap")
        return tuple(heatmap["x"]), _length(heatmap["y"])
    if endpoint == "next_token":  # every token of the vocabulary, in the model's order of probability
        return (frozenset(_figure(result[0])["data"][0]["x"]),)
    if endpoint == "compare":
        texts = [html.unescape(t) for t in GENERATED.findall(result)]
        return len(texts), generating_model(texts)
    raise ValueError(f"no fingerprint for /{endpoint}")


def reference_fingerprints(url: str, arguments) -> dict[str, dict[str, tuple]]:
    """{model: {endpoint: fingerprint}} from one session per shipped model, before the class starts.

    arguments(endpoint, model) gives the call's arguments. Raises if a fingerprint cannot tell the models
    apart, since cross-talk would then go unseen."""
    refs = {}
    for model in MODELS:
        client = Client(url, verbose=False)
        try:
            client.predict(model, api_name="/use_shipped_model")
            refs[model] = {e: fingerprint(e, client.predict(*arguments(e, model), api_name=f"/{e}"))
                           for e in ANALYSIS}
        finally:
            client.close()
        if refs[model]["compare"][1] != model:
            raise RuntimeError(f"{model}'s own generations look like {refs[model]['compare'][1]}'s")
    for e in ANALYSIS:
        if len({refs[m][e] for m in MODELS}) < len(MODELS):
            raise RuntimeError(f"/{e} gives the same fingerprint for {', '.join(MODELS)}")
    return refs
