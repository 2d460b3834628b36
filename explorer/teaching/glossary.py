"""The words a student meets on the charts and in the lessons, each explained once in plain words.

Tabs put a term's explanation next to the label that uses it (a caption, an info= line); the lesson player adds it
under the step that first uses the term. One definition per word, so the app never explains a word two ways."""
import re

# term -> (pattern that finds it in a text, the explanation: a phrase that follows "term: ")
TERMS = {
    "logit": (r"\blogits?\b", "the model's raw score for a next token, before softmax turns the scores into "
                              "probabilities; a higher logit means a more likely token"),
    "softmax": (r"\bsoftmax\b", "turns a row of scores into shares that are all positive and add up to 100%; the "
                                "highest score gets the largest share"),
    "nats": (r"\bnats\b", "the unit of the loss, how surprised the model is by the real next token; 0 is no "
                          "surprise, and ln 2 ≈ 0.69 nats is as unsure as a coin toss"),
    "bits": (r"\bbits\b", "a count of yes-or-no questions: 1 bit is a choice between two equally likely options, "
                          "and each extra bit doubles the number of options (0 bits: no doubt at all)"),
    "mean log-prob": (r"\bmean log-prob(ability)?\b", "the average logarithm of the probability the model gave each "
                                                     "token it wrote; closer to 0 means less surprising picks"),
    "distinct-2": (r"\bdistinct-2\b", "how many of the pairs of neighbouring tokens are different pairs, as a share: "
                                      "1 means no pair comes twice, near 0 means the text loops"),
    "repetition": (r"\brepetition\b", "the share of three-token runs that already came earlier in the text"),
    "causal mask": (r"\bcausal mask\b", "the rule that a position may look only at itself and at earlier positions, "
                                        "never at later ones"),
    "value vectors": (r"\bvalue vectors?\b", "what each token offers to pass on; a head adds up the value vectors "
                                             "of the tokens it looks at, weighted by its attention"),
}


def explained(term: str) -> str:
    """'softmax (turns a row of scores into ...)': the term with its explanation in brackets."""
    return f"{term} ({TERMS[term][1]})"


def definition(term: str) -> str:
    """'**softmax**: turns a row of scores into ...' for a list of words."""
    return f"**{term}**: {TERMS[term][1]}"


def terms_in(text: str) -> list[str]:
    """The glossary terms text uses (case-insensitive), in the glossary's order."""
    return [term for term, (pattern, _) in TERMS.items() if re.search(pattern, text, re.IGNORECASE)]


def words_note(terms, lead: str = "Words") -> str:
    """Markdown under a text: '*Words:* **logit**: ...; **softmax**: ...' ('' for no terms)."""
    return f"*{lead}:* " + "; ".join(definition(t) for t in terms) + "." if terms else ""


def first_uses(texts) -> list[list[str]]:
    """texts (a lesson's steps, in order) -> for each, the terms it is the first of them to use."""
    seen, out = set(), []
    for text in texts:
        new = [t for t in terms_in(text) if t not in seen]
        seen.update(new)
        out.append(new)
    return out
