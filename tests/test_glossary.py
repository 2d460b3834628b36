"""The glossary under lesson steps: every word a lesson's screen uses without saying what it is has an entry, the
step that first shows it names it (so the player's note explains it there), and the lessons name a thing as the
charts do."""
import math
import re
from pathlib import Path

import pytest

from explorer.callbacks.lessons import step_texts
from explorer.teaching.glossary import TERMS, first_uses, terms_in
from explorer.teaching.lessons import read_lesson, shipped_lessons

ROOT = Path(__file__).resolve().parents[1]

SEED_003 = "seed-003-baby-names-and-untrained-walkthrough"
# Words a student meets on a lesson step with no explanation (issue #41, item 5): glossary term -> (the words as
# the app writes them, the file that writes them, the (lesson, step title) of each shipped lesson's first step
# whose screen shows them). The screen's captions come after the step's buttons and depend on the model, so the
# note under a step is computed from the step's own text: a step that shows such a word names it in its text.
SCREEN_WORDS = {
    "explained variance": ("Explained variance", "explorer/callbacks/features_source.py",
                           [("features-not-neurons", "A feature for one of them")]),
    "CE loss recovered": ("CE loss recovered", "explorer/callbacks/features_source.py",
                          [("features-not-neurons", "A feature for one of them")]),
    "L0": ("L0", "explorer/callbacks/features_source.py", [("features-not-neurons", "A feature for one of them")]),
    "SAELens": ("SAELens's layout", "explorer/tabs/features_training.py",
                [("features-not-neurons", "A feature for one of them")]),
    "decoder direction": ("decoder direction", "explorer/teaching/captions_features.py",
                          [("features-not-neurons", "Steer with it")]),
    "K-composition": ("K-composition (strongest pair)", "explorer/figures/progress.py",  # a progress line's name
                      [("how-an-induction-head-forms", "Train and watch the phase change")]),
    "FFN": ("FFN", "explorer/common/views.py",  # the tab's name; the Experiments tab and the split say FFN too
            [("who-wrote-the-answer", "Split the logit")]),
    "eigenvalues": ("eigenvalues", "explorer/assets/lessons/how-an-induction-head-forms.md",
                    [("how-an-induction-head-forms", "The two heads")]),
    "Σλ / Σ|λ|": ("Σλ / Σ|λ|", "explorer/figures/circuits.py", [("how-an-induction-head-forms", "The two heads")]),
    "W_E W_V W_O W_U": ("W_E W_V W_O W_U", "explorer/tabs/heads.py",
                        [("how-an-induction-head-forms", "The two heads"),
                         ("how-an-induction-head-forms", "What the induction head copies")]),
    "restricted loss": ("restricted loss", "explorer/figures/progress.py", [("grokking", "Train with weight decay")]),
    "excluded loss": ("excluded loss", "explorer/figures/progress.py", [("grokking", "Train with weight decay")]),
    "nats": ("nats", "explorer/figures/progress.py",
             [("how-an-induction-head-forms", "Train and watch the phase change"),
              ("grokking", "Train with weight decay"), ("who-wrote-the-answer", "Knock it out")]),
    "d_mlp": ("d_mlp", "explorer/callbacks/model_size.py",  # the Train tab's size line; the FFN tab's intro too
              [("seed-001-big-config-then-classroom", "The seed's configuration"),
               ("seed-003-baby-names-and-untrained-walkthrough", "A GPT for baby names"),
               ("seed-004-post-norm-sinusoidal-bpe", "The seed's configuration"), ("watch-gpt-learn", "Start training"),
               ("grokking", "Train with weight decay"), ("features-not-neurons", "One neuron, several letters")]),
    "GELU": ("GELU", "explorer/callbacks/ffn.py",  # the FFN tab's histogram caption; the Building blocks chart too
             [("features-not-neurons", "One neuron, several letters"),
              ("seed-003-baby-names-and-untrained-walkthrough", "One sentence, no training"),
              ("seed-004-post-norm-sinusoidal-bpe", "Post-norm: normalise after adding")]),
    "rotary positions": ("Rotary positions", "explorer/teaching/captions_circuits.py",  # and the preset's note
                         [("how-an-induction-head-forms", "Train and watch the phase change"),
                          ("how-an-induction-head-forms", "What the induction head copies"),
                          ("seed-001-big-config-then-classroom", "The classroom size")]),
    # the student walk of issue #41: the seeds' designs in the presets' notes, and what the charts measure
    "RMSNorm": ("RMSNorm", "model_core/training/presets.py", [(SEED_003, "A GPT for baby names")]),
    "SwiGLU": ("SwiGLU", "model_core/training/presets.py", [(SEED_003, "A GPT for baby names")]),
    "tied embeddings": ("tied weights", "model_core/training/presets.py", [(SEED_003, "A GPT for baby names")]),
    "Adam": ("AdamW", "model_core/training/presets.py",
             [(SEED_003, "A GPT for baby names"), ("seed-002-statquest", "Train in seconds")]),
    "Muon": ("Muon for the blocks' matrices", "model_core/training/presets.py",
             [("seed-001-big-config-then-classroom", "The classroom size")]),
    "L2 norm": ("L2 norm", "explorer/figures/embeddings.py",  # the norms chart's axis (and the residual tab's)
                [("seed-000-characters-to-qkv", "Embeddings: a lookup table of vectors"),
                 ("seed-002-statquest", "How the two numbers moved"), (SEED_003, "Token and position embeddings"),
                 (SEED_003, "Residual stream and updates"), ("seed-004-post-norm-sinusoidal-bpe", "Sinusoidal positions")]),
    "std": ("std", "explorer/figures/building_blocks.py",  # the norm histograms' titles
            [(SEED_003, "LayerNorm and GELU up close"),
             ("seed-004-post-norm-sinusoidal-bpe", "Post-norm: normalise after adding")]),
    "SiLU": ("SiLU", "explorer/figures/building_blocks.py",  # the activation functions' chart
             [(SEED_003, "LayerNorm and GELU up close"),
              ("seed-004-post-norm-sinusoidal-bpe", "Post-norm: normalise after adding")]),
    "head output z": ("Head output z", "explorer/figures/attention.py",  # How the pattern is made, last panel
                      [("attention-basics", "The causal mask: no peeking at the future"),
                       ("seed-000-characters-to-qkv", "Queries, keys and values"),
                       (SEED_003, "The four steps of attention")]),
    "logit lens": ("Logit lens", "explorer/tabs/residual.py", [(SEED_003, "Residual stream and updates")]),
    "probe text": ("probe text", "explorer/common/controls.py", [("watch-gpt-learn", "Heads forming")]),
    "squared Fourier norm": ("squared Fourier norm", "explorer/teaching/captions_grokking.py",
                             [("grokking", "Waves inside the model")]),
    "bits": ("bits per character", "explorer/teaching/captions_experiments.py",
             [("a-real-model", "Your class's model against the real one")]),
}


def lesson_steps(slug: str) -> tuple[list[str], list[str]]:
    """(step titles, the words of each step as the player matches them) of a shipped lesson."""
    lesson = read_lesson(shipped_lessons()[slug])
    return [step.title for step in lesson.steps], step_texts(lesson)


@pytest.mark.parametrize("term", SCREEN_WORDS)
def test_each_word_the_screen_shows_has_an_entry_that_finds_it_as_written(term):
    words, source, _ = SCREEN_WORDS[term]
    assert term in TERMS, f"the glossary has no entry for {term!r}"
    assert term in terms_in(f"… {words} 0.98 …"), f"{term!r}'s pattern does not find {words!r}"
    assert words in (ROOT / source).read_text(), f"{source} no longer writes {words!r}: update SCREEN_WORDS"


@pytest.mark.parametrize("term", SCREEN_WORDS)
def test_the_step_that_shows_a_word_names_it_so_its_note_explains_it(term):
    for slug, title in SCREEN_WORDS[term][2]:
        titles, texts = lesson_steps(slug)
        assert title in titles, f"{slug} has no step {title!r}: update SCREEN_WORDS"
        index = titles.index(title)
        assert term in terms_in(texts[index]), f"{slug}, step {title!r} shows {term!r} but its text never names it"


@pytest.mark.parametrize("slug", sorted(shipped_lessons()))
def test_every_listed_word_a_lesson_writes_is_explained_at_its_first_use(slug):
    """An invariant over all shipped lessons: wherever a lesson's text writes one of the words, the glossary finds
    it there, and the player explains it on the first step that does."""
    _, texts = lesson_steps(slug)
    explained = [term for new in first_uses(texts) for term in new]
    for text in texts:
        flat = " ".join(text.split())
        for term, (words, _, _) in SCREEN_WORDS.items():
            if re.search(rf"(?<!\w){re.escape(words)}(?![\w·])", flat, re.IGNORECASE):  # not the L0 of L0·H1
                assert term in terms_in(text) and term in explained, f"{slug} writes {words!r} unexplained"


HEAD_BY_NUMBERS = re.compile(r"\bheads?\s+\d+\s*[·.]\s*\d+|\b\d+·\d+\b")  # "head 1·0", "head 0.1", "1·0"


@pytest.mark.parametrize("slug", sorted(shipped_lessons()))
def test_lessons_name_heads_and_frequencies_as_the_charts_do(slug):
    """A head is L1·H0 as in the charts' titles and captions (claim lines keep their own `head 1.0`), and a Fourier
    frequency is k, as on the grokking chart's axis."""
    lines = shipped_lessons()[slug].read_text().splitlines()
    prose = "\n".join(line for line in lines if not line.startswith("expect:"))
    assert not HEAD_BY_NUMBERS.search(prose), f"{slug}: {HEAD_BY_NUMBERS.search(prose).group()!r}, write L1·H0"
    assert not re.search(r"ω|\b(cos|sin)\(w\b", prose), f"{slug} writes a frequency as w or ω: write k"


def test_line_breaks_do_not_hide_a_word():
    assert terms_in("the *CE loss\nrecovered* and the causal\nmask") == ["CE loss recovered", "causal mask"]
    assert terms_in("Muon (Newton–Schulz) beside AdamW, on bits") == ["Muon", "Adam", "bits"]  # the text's order
    assert terms_in("L0·H1 writes it, after L0 in the stream") == []  # a head and a layer, not the SAE's L0


UNIFORM_GUESS = re.compile(r"ln\s*\(?(\d+)\)?\s*≈\s*([\d.]+)")  # "ln 60 ≈ 4.09", "ln(64) ≈ 4.16"


def test_the_nats_note_agrees_with_every_step_it_is_shown_under():
    """The note said a uniform guess 'over 64 tokens costs ln 64 ≈ 4.16' under the grokking step whose task has 60
    tokens (ln 60 ≈ 4.09). One note explains nats in every lesson, whose vocabularies differ: it gives the rule for
    any N, names no vocabulary size, and every number it quotes is right."""
    entry = TERMS["nats"][1]
    assert "uniform guess among N tokens costs ln N nats" in entry
    assert not re.search(r"\b\d+ (tokens|characters)\b", entry), entry
    for n, value in UNIFORM_GUESS.findall(entry):
        assert abs(math.log(int(n)) - float(value)) <= 0.5 * 10 ** -len(value.split(".")[-1]), (n, value)
    shown_under = set()  # the vocabulary sizes the steps that first use 'nats' quote
    for slug in shipped_lessons():
        _, texts = lesson_steps(slug)
        for text, new in zip(texts, first_uses(texts)):
            if "nats" in new:
                shown_under |= {int(n) for n, _ in UNIFORM_GUESS.findall(text)}
    assert {60, 64} <= shown_under  # grokking and seed-001: one note could not quote both
