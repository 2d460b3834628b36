"""What a lesson step claims about its model: `expect:` lines, their grammar, and whether a measurement holds.

A claim is "<quantity> <test>": `top token is "e"`, `role of head 0.1 is previous token`, `restored at layer 0,
position 34 above 90%`. The quantities are the numbers and names the app's charts and captions show; explorer.
lesson_check measures them on the step's model and settings. Parsing is pure, so a typo is reported with its line
before any model is loaded. The vocabulary is documented in docs/lessons.md."""
import re
from dataclasses import dataclass
from typing import Optional

from explorer.common.shipped_list import DEFAULT_MODEL
from explorer.common.views import VIEWS

QUOTED = r'"(?:[^"\\]|\\.)*"'
HEAD = r"(\d{1,3}\.\d{1,3})"
CELL = r"((?:layer|head) \d{1,4}, (?:position|head) \d{1,4})"
PART = r"(embeddings|biases|layer \d{1,4} (?:attention|FFN))"

# name -> (pattern of the quantity, kind of value, what it measures, for the docs and error messages). Kinds:
# "number", "text" (compared as written, tokens quoted), "count" (a whole number). A quantity's groups are its
# arguments (a quoted token, a head "layer.head", a chart cell). Each is read off one tab: explorer.common.views
# lists them per tab, and explorer.lesson_check's MEASURES measures them.
QUANTITIES = {
    "top token": (r"top token", "text", "the most likely next token after the prompt"),
    "probability": (rf"probability of ({QUOTED})", "number",
                    "that token's probability after the step's temperature, top-k, top-p and min-p"),
    "tokens kept": (r"tokens kept", "count", "how many tokens those filters keep"),
    "greedy continuation": (r"greedy continuation", "text", "the 40 tokens the model writes at temperature 0"),
    "most repetitive column": (r"most repetitive column", "text",
                               "the Side by side column (its settings, e.g. 'temperature 0.5') with the highest "
                               "repetition, from the shipped comparison table, 150 tokens and the step's seed"),
    "role": (rf"role of head {HEAD}", "text", "the head's role on the prompt, as the Attention tab's caption names it"),
    "role score": (rf"role score of head {HEAD}", "number",
                   "the share that earned the head its role (for most roles: of the attention left after the sink)"),
    "heads with role": (r"heads with role ([a-z ]+?)", "count", "how many heads the caption gives that role on the prompt"),
    "attention": (rf"attention of head {HEAD} from (\d{{1,4}}) to (\d{{1,4}})", "number",
                  "the attention weight from one query position to one key position (Where one query looks)"),
    "brightest column": (rf"brightest column of head {HEAD}", "count",
                         "the key position with the most attention summed over every query (a stripe)"),
    "first-token share": (rf"first-token share of head {HEAD}", "number",
                          "the head's average share of attention on the first token (queries after the first)"),
    "induction score": (rf"induction score of head {HEAD}", "number",
                        "the Heads tab's induction score (a random sequence shown twice)"),
    "split logit": (r"split logit", "number",
                    "what Split the logit splits: the answer's logit, minus the against token's when one is set"),
    "largest part": (r"largest part", "text", "the bar of the split that is largest in size"),
    "part": (rf"part {PART}", "number", "one bar of the split"),
    "head part": (rf"part of head {HEAD}", "number", "one head's part of the split (a cell of its heatmap)"),
    "top head": (r"top head", "text", "the head whose part of the split is largest in size, as layer.head"),
    "top head's source": (r"top head's main source", "count",
                          "the position the top head's part comes from most (the split's second chart)"),
    "clean difference": (r"clean difference", "number", "answer minus alternative logit on the clean prompt"),
    "corrupted difference": (r"corrupted difference", "number", "the same on the corrupted prompt"),
    "restored": (rf"restored at {CELL}", "number", "one cell of the step's patching chart (0 = corrupted, 1 = clean)"),
    "most restored": (r"most restored", "text", "the cell of the patching chart that restores the most"),
    "loss rise": (rf"loss rise without head {HEAD}", "number",
                  "the validation loss with the head knocked out (mean ablation) minus the intact model's"),
    "bits per character": (r"bits per character of ([a-z0-9-]+)", "number",
                           "a shipped model's bits per character on the prompt (Compare A and B's table)"),
    "vocabulary size": (r"vocabulary size", "count", "tokens in the vocabulary of the step's corpus and tokenizer"),
    "text tokens": (r"text tokens", "count", "tokens in the whole text of the step's corpus (training and validation)"),
    "training examples": (r"training examples", "count",
                          "examples the model trains on, of a task's corpus (modular addition: pairs a b)"),
    "parameters": (r"parameters", "count", "parameters of the model the Train tab's controls describe"),
    "untrained loss": (r"untrained loss", "number", "the validation loss of that model as Start builds it, before "
                                                    "its first step (nats per token)"),
    "test accuracy": (r"test accuracy", "number", "a modular-addition model's accuracy on the pairs it never trained "
                                                  "on (the Grokking tab's caption)"),
    "key frequencies": (r"key frequencies", "count", "how few frequencies carry 90 % of the number embedding's squared "
                                                     "Fourier norm (the Grokking tab's red bars; 10 at most)"),
}
# The Features tab and the FFN tab's neurons (a lesson on sparse autoencoders): features and neurons by number,
# a neuron as layer.neuron, a steering strength in units of the feature's largest activation.
FEATURE = r"(\d{1,6})"
NEURON = r"(\d{1,3}\.\d{1,6})"
STRENGTH = r"(-?\d{1,3}(?:\.\d+)?)"
SEEDS = r"(\d{1,6}) to (\d{1,6})"
STEERED = rf"steered text of feature {FEATURE} at {STRENGTH}"
QUANTITIES.update({
    "neuron activation": (rf"activation of neuron {NEURON} at (\d{{1,4}})", "number",
                          "an FFN neuron's activation (after its non-linearity) at one position of the prompt (the FFN "
                          "tab's table of the tokens that most activate it)"),
    "feature activation": (rf"activation of feature {FEATURE} at (\d{{1,4}})", "number",
                           "a feature's activation at one position of the prompt (the prompt coloured by the feature)"),
    "strongest feature": (r"strongest feature at (\d{1,4})", "count",
                          "the feature most active at one position of the prompt (the Features listing's first row)"),
    "active features": (r"active features at (\d{1,4})", "count",
                        "how many features are active at one position of the prompt (the Features listing's caption)"),
    "density": (rf"density of feature {FEATURE}", "number",
                "the share of the validation tokens on which the feature fires"),
    "feature top token": (rf"top token of feature {FEATURE}", "text",
                          "the token most of the feature's top places in the validation text are on, as its caption "
                          "names it (fires hardest on ...)"),
    "promoted token": (rf"top promoted token of feature {FEATURE}", "text",
                       "the token whose logit the feature's direction raises most (Tokens it promotes and suppresses)"),
    "top neuron": (rf"top neuron of feature {FEATURE}", "text",
                   "the FFN neuron, as layer.neuron, whose activations follow the feature most (its neuron table's "
                   "first row)"),
    "neuron correlation": (rf"correlation of neuron {NEURON} with feature {FEATURE}", "number",
                           "how closely the neuron's activations follow the feature's over the validation text (a row "
                           "of the feature's neuron table)"),
    "steered text": (STEERED, "text", "the text the Steer button writes with the feature added at that strength "
                                      "(the step's prompt and steering seed, temperature and length)"),
    "unsteered text": (r"unsteered text", "text", "the text the Steer button writes without steering"),
    "steered count": (rf"count of ({QUOTED}) in {STEERED}", "count",
                      "how many times a piece of text occurs in that steered text"),
    "unsteered count": (rf"count of ({QUOTED}) in unsteered text", "count",
                        "how many times a piece of text occurs in the text written without steering"),
    "steered count over seeds": (rf"count of ({QUOTED}) in {STEERED} over seeds {SEEDS}", "count",
                                 "the same, added up over the texts of several seeds (at most 10)"),
    "unsteered count over seeds": (rf"count of ({QUOTED}) in unsteered text over seeds {SEEDS}", "count",
                                   "the same without steering, added up over the texts of several seeds"),
    "contexts right after": (rf"top contexts of feature {FEATURE} right after ({QUOTED})", "count",
                             "how many of the feature's top contexts have that text just before the highlighted "
                             "token"),
    "contexts with after": (rf"top contexts of feature {FEATURE} with ({QUOTED}) after", "count",
                            "how many of them show that text after the highlighted token"),
})
# The Graph tab: the attribution graph of the step's prompt, pruned at the step's node threshold.
QUANTITIES.update({
    "graph top token": (r"graph top token", "text", "the top logit node of the prompt's attribution graph"),
    "graph top probability": (r"graph top probability", "number", "that token's probability"),
    "replacement score": (r"replacement score", "number", "the graph's replacement score (the share of the "
                                                          "prompt's influence on the logits not passing through errors)"),
    "completeness score": (r"completeness score", "number", "the graph's completeness score"),
    "graph nodes": (r"graph nodes", "count", "nodes kept in the pruned graph (tokens and logits included)"),
    "strongest graph feature": (r"strongest graph feature", "text",
                                "the most influential feature of the pruned graph as the caption names it, "
                                "L<layer> F<feature> at <position>"),
    "token influence": (r"influence of token (\d{1,4})", "number",
                        "the share of the prompt's token nodes' influence on the logits that the token at that "
                        "position has"),
})
# measured from the step's controls alone: the quantities of the Data and Train tabs
NEEDS_NO_MODEL = tuple(quantity for view in VIEWS if not view.needs_model for quantity in view.quantities)
NUMBER = r"(-?\d+(?:\.\d+)?(?:e\d+)?)\s*([%kM]?)"
TESTS = {  # name -> pattern of the test after the quantity, and the kinds it applies to
    "is": (r"is (.+)", ("text", "count", "number")),
    "above": (rf"above {NUMBER}", ("number", "count")),
    "below": (rf"below {NUMBER}", ("number", "count")),
    "between": (rf"between {NUMBER} and {NUMBER}", ("number", "count")),
    "starts with": (rf"starts with ({QUOTED})", ("text",)),
}
SCALE = {"": 1.0, "%": 0.01, "k": 1e3, "M": 1e6}


class ClaimError(ValueError):
    """An expect: line that is not a claim this checker knows; the message lists the forms."""


@dataclass(frozen=True)
class Claim:
    text: str  # as written after "expect:"
    line: int  # in the lesson file
    quantity: str  # a key of QUANTITIES
    args: tuple  # the quantity's arguments (a token's text, "layer.head", a cell), unquoted
    test: str  # a key of TESTS
    values: tuple  # its values: numbers for above/below/between, one text for is / starts with

    @property
    def needs_model(self) -> bool:
        return self.quantity not in NEEDS_NO_MODEL


def parse_claim(text: str, line: int = 0) -> Claim:
    """`role of head 0.1 is previous token` -> Claim; ClaimError saying which forms exist."""
    text = text.strip()
    for name, (quantity, kind, _) in QUANTITIES.items():
        for test, (pattern, kinds) in TESTS.items():
            match = re.fullmatch(rf"{quantity} {pattern}", text)
            if match and kind in kinds:
                n_args = re.compile(quantity).groups
                args = tuple(unquote(a) for a in match.groups()[:n_args])
                return Claim(text, line, name, args, test, test_values(test, match.groups()[n_args:], kind))
    raise ClaimError(f"not a claim this checker knows: {text!r}. A claim is a quantity and a test, e.g. 'top token "
                     f"is \"e\"' or 'restored at layer 0, position 3 above 90%'. Quantities: "
                     f"{'; '.join(pattern_help(q) for q in QUANTITIES.values())}. Tests: is, above, below, between "
                     "... and ..., starts with \"...\".")


def pattern_help(entry) -> str:
    """A quantity's pattern as a reader writes it: 'restored at layer L, position P'."""
    return (entry[0].replace(f"({QUOTED})", '"token"').replace(HEAD, "L.H").replace(CELL, "layer L, position P")
            .replace(PART, "layer L attention").replace(SEEDS, "A to B").replace(NEURON, "L.N")
            .replace(STRENGTH, "S").replace(FEATURE, "F").replace(r"(\d{1,4})", "P").replace("\\", ""))


def test_values(test: str, groups: tuple, kind: str) -> tuple:
    if test == "is":
        value = groups[0].strip()
        if kind == "text":
            return (unquote(value) if value.startswith('"') else value,)
        return (number(*re.fullmatch(NUMBER, value).groups()) if re.fullmatch(NUMBER, value) else value,)
    if test == "starts with":
        return (unquote(groups[0]),)
    return tuple(number(groups[i], groups[i + 1]) for i in range(0, len(groups), 2))


def number(digits: str, suffix: str) -> float:
    return float(digits) * SCALE[suffix]


def unquote(value: str) -> str:
    """'"a\\nb"' -> 'a' newline 'b' (the lesson format's quoting); anything unquoted is returned as it is."""
    if not (value.startswith('"') and value.endswith('"') and len(value) >= 2):
        return value
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), value[1:-1])


def holds(claim: Claim, measured) -> bool:
    """Whether the measured value passes the claim's test."""
    if claim.test == "is":
        expected = claim.values[0]
        if isinstance(expected, float) and isinstance(measured, (int, float)):
            return abs(measured - expected) <= 1e-9 * max(1.0, abs(expected))
        return str(measured) == str(expected)
    if claim.test == "starts with":
        return str(measured).startswith(claim.values[0])
    if not isinstance(measured, (int, float)):
        return False
    if claim.test == "above":
        return measured > claim.values[0]
    if claim.test == "below":
        return measured < claim.values[0]
    low, high = sorted(claim.values)
    return low <= measured <= high


def shown(measured) -> str:
    """A measured value as the failure message shows it."""
    if isinstance(measured, float):
        return f"{measured:.4g}"
    return repr(measured) if isinstance(measured, str) else str(measured)


def describe(claim: Claim) -> Optional[str]:
    """What the claim's quantity measures (for the check command's report)."""
    return QUANTITIES[claim.quantity][2]


def models_in_effect(steps) -> list[str]:
    """The shipped model each step inspects (steps: a lesson's Steps): the one it or an earlier step names, else
    the app's default."""
    current, out = DEFAULT_MODEL, []
    for step in steps:
        current = step.settings.get("model", current)
        out.append(current)
    return out


def claim_model(claim: Claim, model: str) -> str:
    """What a claim is measured on at a step inspecting model: the model, or "" for a claim that needs none."""
    return model if claim.needs_model else ""


def claim_models(steps) -> set:
    """The shipped models a lesson's claims are measured on ("" for claims that need none)."""
    return {claim_model(c, model) for step, model in zip(steps, models_in_effect(steps)) for c in step.claims}
