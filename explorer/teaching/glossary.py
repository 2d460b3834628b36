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
    "nats": (r"\bnats\b", "the unit of the loss when it is measured with the natural logarithm (ln): how surprised "
                          "the model is by the real next token. 0 nats is no surprise, and a uniform guess among N "
                          "tokens costs ln N nats (for two tokens, ln 2 ≈ 0.69)"),
    "bits": (r"\bbits\b", "a count of yes-or-no questions: 1 bit is a choice between two equally likely options, "
                          "and each extra bit doubles the number of options (0 bits: no doubt at all)"),
    "mean log-prob": (r"\bmean log-prob(ability)?\b", "the average logarithm of the probability the model gave each "
                                                     "token it wrote; closer to 0 means less surprising picks"),
    "distinct-2": (r"\bdistinct-2\b", "how many of the pairs of neighbouring tokens are different pairs, as a share: "
                                      "1 means no pair comes twice, near 0 means the text loops"),
    "repetition": (r"\brepetition\b", "the share of three-token runs that already came earlier in the text"),
    "min-p": (r"\bmin[-_]p\b", "a cut that keeps only the tokens whose probability, after the temperature, is at "
                               "least min-p times the top token's (min-p 0.1: at least a tenth of it); the kept "
                               "tokens share 100% again. 0 turns it off"),
    "top-k": (r"\btop[-_]k\b", "a cut that keeps only the k most likely tokens, however the probability is "
                               "spread; the kept tokens share 100% again. 0 turns it off"),
    "causal mask": (r"\bcausal mask\b", "the rule that a position may look only at itself and at earlier positions, "
                                        "never at later ones"),
    "value vectors": (r"\bvalue vectors?\b", "what each token offers to pass on; a head adds up the value vectors "
                                             "of the tokens it looks at, weighted by its attention"),
    "FFN": (r"\bFFNs?\b", "the feed-forward network of each layer (many texts call it the MLP): after attention, it "
                         "works on every token's vector on its own, widening it to d_mlp neurons, passing them through "
                         "an activation function and narrowing it back"),
    # the model's sizes, as the Train tab's size line and the FFN tab write them
    "d_model": (r"\bd_model\b", "the length of the vector the model keeps for every token: the width of the residual "
                                 "stream that every layer reads and writes"),
    "d_head": (r"\bd_head\b", "the length of one head's query, key and value vectors: d_model divided by the number "
                               "of heads"),
    "d_mlp": (r"\bd_mlp\b", "the number of neurons in each FFN: it widens every token's vector from d_model to d_mlp "
                             "numbers and narrows it back (GPT-2 uses 4 × d_model)"),
    "GELU": (r"\bGELU\b", "the smooth activation function of GPT-2's FFN: large positive inputs pass almost "
                           "unchanged, large negative ones become almost 0, and it bends smoothly in between (dipping "
                           "a little below 0)"),
    "ReLU": (r"\bReLU\b", "the activation function max(0, x): negative inputs become 0 and positive ones pass "
                           "unchanged, with a sharp corner at 0"),
    "rotary positions": (r"\brotary\b|\bRoPE\b", "a way to tell attention where the tokens are without adding "
                                                  "position vectors: each query and key is turned by an angle that "
                                                  "grows with its position, so a query·key score depends on how far "
                                                  "apart the two tokens are"),
    # a head's circuits, read off its weights (Heads tab)
    "W_E W_V W_O W_U": (r"W_E\s*W_V\s*W_O\s*W_U", "a head's OV circuit as the product of the matrices a token "
                                                  "passes through: the token embedding (W_E), the head's value (W_V) "
                                                  "and output (W_O) matrices, and the unembedding (W_U) that turns a "
                                                  "vector into logits. Its row for a token says how attending to that "
                                                  "token changes the logit of every next token"),
    "K-composition": (r"\bK-composition\b", "how much a head's key reads what a head of an earlier layer wrote into "
                                              "the residual stream, scored from the two heads' weights (0: not at "
                                              "all, higher: more). An induction head's key reads what a "
                                              "previous-token head wrote"),
    "eigenvalues": (r"\beigenvalues?\b", "the numbers λ for which a square matrix sends some vector v to λ·v, "
                                          "stretching it without turning it. A positive λ keeps v's direction, a "
                                          "negative one flips it"),
    "Σλ / Σ|λ|": (r"Σλ\s*/\s*Σ\|λ\|", "the copying score: the sum of the OV circuit's eigenvalues λ divided by the "
                                     "sum of their sizes. +1 when all are positive (attending to a token raises that "
                                     "token's logit), −1 when all are negative (it lowers it)"),
    # the grokking lab's losses (Nanda et al., 2023)
    "restricted loss": (r"\brestricted loss(es)?\b", "the loss when the logits keep only their key-frequency parts "
                                                      "(the cos and sin of 2πk(a + b)/p for the key frequencies k, "
                                                      "and a constant): low once those few waves alone give the "
                                                      "answer"),
    "excluded loss": (r"\bexcluded loss(es)?\b", "the loss on the training pairs with those key-frequency parts "
                                                  "removed from the logits: it rises as the model stops answering "
                                                  "from memory and relies on the waves"),
    # a sparse autoencoder (SAE), as the Features tab's SAE line and steering caption describe it
    "explained variance": (r"\bexplained variance\b", "how much of the spread of the model's vectors (around their "
                                                      "average) the SAE's rebuilt vectors reproduce: 1 is a perfect "
                                                      "copy, 0 no better than always giving the average vector"),
    "CE loss recovered": (r"\bCE loss recovered\b", "how much of the model's skill survives when the SAE's rebuilt "
                                                    "vectors replace the real ones (CE: cross-entropy, the loss): 1 "
                                                    "means the loss does not change, 0 that it is as bad as with "
                                                    "those vectors set to zero"),
    "L0": (r"(?<!after )\bL0\b(?!\s*·\s*H)", "how many features are active (not zero) at a token, on average (a "
                                             "TopK SAE keeps exactly k)"),
    "decoder direction": (r"\bdecoder directions?\b", "the vector the SAE adds back into the model for each unit of "
                                                      "a feature's activation: what the feature stands for in the "
                                                      "model's own space"),
    "SAELens": (r"\bSAELens\b", "an open-source library for sparse autoencoders. An SAE saved in SAELens's layout "
                                 "(a folder with cfg.json and sae_weights.safetensors) loads in SAELens, and SAELens's "
                                 "own SAEs load here"),
    # the seeds' designs, as the presets' notes and the Train tab name them
    "RMSNorm": (r"\bRMSNorm\b", "a simpler LayerNorm: it divides each vector by its root mean square (the square root "
                                 "of the mean of its squared numbers) and scales it by learned gains, without first "
                                 "subtracting the mean"),
    "SwiGLU": (r"\bSwiGLU\b", "an FFN whose neurons are each the product of two projections of the token's vector, "
                               "one of them passed through SiLU (the gate). It has three weight matrices instead of "
                               "two, so its width is usually 8/3 × d_model to keep the same number of weights"),
    "SiLU": (r"\bSiLU\b", "the activation function x · sigmoid(x) (also called swish): like GELU, large positive "
                           "inputs pass almost unchanged, large negative ones become almost 0, and it dips a little "
                           "below 0 in between"),
    "tied embeddings": (r"\btied (input/output )?(embeddings?|weights)\b", "one matrix does both ends of the model: "
                                                                           "it turns tokens into vectors at the input, "
                                                                           "and vectors back into logits at the "
                                                                           "output, so there is one token table to "
                                                                           "learn instead of two"),
    "Adam": (r"\bAdamW?\b", "the usual optimiser (the rule that updates the weights): each weight moves against its "
                             "gradient, scaled by running averages of its recent gradients, so every weight takes "
                             "steps of a similar size. AdamW also shrinks the weights a little at every step (weight "
                             "decay)"),
    "Muon": (r"\bMuon\b", "an optimiser for the weight matrices: it turns each update into one that changes every "
                           "direction of the matrix by about the same amount (with a few Newton–Schulz steps). Here it "
                           "trains the blocks' matrices, and AdamW the rest"),
    # what the charts measure
    "L2 norm": (r"\bL2 norms?\b", "the length of a vector: the square root of the sum of its squared numbers"),
    "std": (r"\bstd\b", "the standard deviation: how far the values typically sit from their mean (the square root "
                         "of their mean squared distance from it). A norm layer brings it to about 1"),
    "head output z": (r"\bhead output \*?z\b", "what one attention head passes on at each position: the value "
                                                "vectors of the tokens it looks at, added up with its attention "
                                                "weights (d_head numbers), before its output matrix writes them into "
                                                "the residual stream"),
    "logit lens": (r"\blogit lens\b", "reading the residual stream after each layer as if it were the last one: the "
                                       "final norm and the unembedding turn it into a next-token guess, so you see "
                                       "at which layer the answer appears"),
    "probe text": (r"\bprobe text\b", "a fixed line of text the app runs the model on at every snapshot of its "
                                       "training, so the attention drawn at different steps is always on the same "
                                       "characters and can be compared"),
    "squared Fourier norm": (r"\bsquared Fourier norm\b", "the size of the number embedding counted frequency by "
                                                           "frequency: written as a sum of cos and sin waves over "
                                                           "the numbers 0 to p − 1, each frequency adds the squared "
                                                           "sizes of its two waves. A frequency's share of it is how "
                                                           "much of the embedding that one wave carries"),
}


def explained(term: str) -> str:
    """'softmax (turns a row of scores into ...)': the term with its explanation in brackets."""
    return f"{term} ({TERMS[term][1]})"


def meaning(term: str) -> str:
    """'turns a row of scores into ...': the explanation alone, for an info= line beside a control named by it."""
    return TERMS[term][1]


def definition(term: str) -> str:
    """'**softmax**: turns a row of scores into ...' for a list of words."""
    return f"**{term}**: {TERMS[term][1]}"


def terms_in(text: str) -> list[str]:
    """The glossary terms text uses (case-insensitive, a line break counting as a space), in the order it first uses
    them: a note under the text reads as the text does."""
    text = " ".join(text.split())
    found = {term: re.search(pattern, text, re.IGNORECASE) for term, (pattern, _) in TERMS.items()}
    return sorted((term for term, match in found.items() if match), key=lambda term: found[term].start())


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
