"""The Guide tab: a short classroom explanation per tab, for someone who has never seen a transformer."""

GUIDE = """
## How to use this app in a class

A **GPT** reads text as a list of *tokens* (here usually single characters) and, at every position, guesses
the next token. It has been trained by showing it lots of text and nudging its numbers whenever it guessed
wrong. This app lets you train one yourself and then look inside.

**Every tab** reads the one **prompt** box above the tabs (type it once). Above the charts a line per chart
says, in words computed from the numbers, what that chart shows right now. Hover a chart for its toolbar:
the camera saves it as a **PNG**, the **SVG** button as a vector image for a report, both named after the
tab, the chart, the model and the prompt. **Download data** at the bottom of a tab saves a zip with one CSV
table per chart (the numbers shown) and a settings file (model, prompt, settings, captions).
Add `?__theme=dark` to the address for dark mode; every control can be reached with the Tab key.

### Lessons
A lesson is a guided tour: **Next** / **Back** walk through its steps (step *k* of *n*); each step opens a tab,
sets its controls (model, prompt, layer, head, sampling knobs…) and says what to look at; a question's
answer goes to the teacher, and where the lesson knows the right one it says so at once. A lesson can hide the
advanced controls so a first-time student sees only what the step needs. Shipped lessons include "What does
attention look at?", "Watch a GPT learn", "Temperature and top-p" and "Features, not neurons" (the lesson picker
lists them all). A teacher writes her own as a Markdown file (one `## ` heading per step, `key: value` lines for
the settings, then the text) and opens it with `python app.py --lesson FILE`, or sends a `lesson=` link to a
shipped one. A link to the current view (tab,
model, prompt, layer, head, sampling knobs) can be copied and sent to students too.

### Data
**What you see:** the text, its vocabulary (every distinct token with its id), the token ids as a bar chart,
the 90/10 split into training and validation text, and one batch of (input → target) pairs.
**Look for:** the target is always the next token of the input. The model learns from *every* position at
once: from one token, from two tokens, … up to the block size.
**Ask the class:** why do we keep 10% of the text away from training?

### Train
**What you see:** the loss (how surprised the model is by the real next token; lower is better) for
training batches and for the held-out validation text, a sample written by the model every so often, and the
attention of every head on a fixed text.
**Look for:** the loss starts near ln(vocabulary size) (≈ 4.2 for 65 characters: pure guessing) and falls
fast, then slowly. Samples go from random letters to word-like shapes to names followed by a colon.
**Ask the class:** what would it mean if training loss kept falling but validation loss went up?
**Controls:** **Pause** makes the other tabs inspect the model as it is at that step (look inside, then
**Resume**); **Stop** ends the run. **Models:** pick a shipped model, **save** the inspected model as a .zip
(weights, tokenizer, settings and training history), or **load** a saved .zip to continue the lesson another
day. **Download data** here saves the run's history: the loss at every step, every evaluation, the samples.

### Attention
**What you see:** one small heatmap per head. Rows are the token doing the looking (the *query*), columns
are the tokens it can look at (the *keys*). Only earlier tokens are allowed (the *causal mask*), so the top
right half is empty. The four panels show the steps: raw scores, scores after the mask, softmax weights,
and the head's output.
**Look for:** a bright line just below the diagonal is a *previous-token head*. A bright first column is an
*attention sink*: the head parks attention on the first token when it has nothing useful to do. The captions name
each head's role on your prompt with the words of the Heads tab's report card (previous token, self, local,
focused, broad, induction, duplicate token, resting on the sink), measured the same way: on the attention left
after the first token. The fourth panel, the head output *z*, is what each position passes on: the value vectors
mixed with the attention weights.
The big heatmap is the **selected head** (layer and head sliders); **Where one query looks** shows one row of it
as bars (the query position slider; later keys are greyed out: masked). **Head statistics** lists, per head, its
share of attention on the previous token, itself and the first token, the mean distance it looks back, and its
entropy in *bits* (how spread out a row is: 0 bits is all on one token, 1 bit is two tokens half and half, each
extra bit doubles the number of tokens). The *no sink* columns measure the same after dropping the first token and
rescaling what is left to 100%.
**Watch the heads form during training** (the fold-out below): slide from the start of training to the end to
see the attention of every head at each recorded snapshot, with the loss at that point. Untrained heads look
at everything evenly; the diagonal and previous-token stripes appear as the loss falls.
**Ask the class:** why can't a token look at the tokens after it?

### Residual stream
**What you see:** the running vector at every position that each layer reads and adds to; its size across
layers; the size of what attention and the FFN add; and the *logit lens*: what the model would predict if it
stopped after each layer.
**Look for:** updates are small compared with the stream: layers *add* information rather than replace it.
In the logit lens the final guess often appears in the middle layers already.
**Panels:** the stream's norm across layers; each layer's attention and FFN update sizes; the attention update
against the stream, position by position, for the chosen layer; their variances; the whole stream as a
heatmap (vector size per position, or every dimension); the logit lens (top guess and its probability).
**Ask the class:** what does it mean that the stream is a *sum*?

### Embeddings
**What you see:** token vectors and position vectors squeezed to 2 or 3 dimensions with PCA, their sum for
your prompt, and hidden states after a chosen layer.
**Look for:** vowels cluster together, as do capitals and punctuation; learned positions often form a smooth
curve (neighbouring positions are similar). The heatmap shows every number of the position vectors, and the
last chart compares the size of each token's vector with its position's: the larger one dominates the input.
**Ask the class:** why does the model need position vectors at all?

### FFN
**What you see:** histograms of the values entering and leaving the non-linearity, how often each neuron
fires, neurons that never fire ("dead"), and the tokens that most excite one neuron.
**Look for:** after GELU/ReLU most values sit at or near zero: each token switches on only some neurons.
**Building blocks:** LayerNorm's effect (the values of one layer before and after it: every position rescaled
to mean 0 and spread 1) and the activation functions side by side (ReLU cuts negatives to 0; GELU and SiLU
let small negative values through).
**Ask the class:** pick a neuron: can you guess what it detects from its top tokens?

### Features
**What you see:** a *sparse autoencoder* (SAE), trained after the model on one layer, rewrites each position's
vector as a sum of a few *features* out of many; the list shows the features active at a chosen token, or the
ones that fire most often. For one feature: the prompt coloured by it, the places in the validation text where it
fires hardest, how often it fires (its *density*), the tokens it pushes up and down, and the FFN neurons that
follow it. **Steer** adds the feature to the layer while the model writes, beside the text written without it.
**Look for:** one neuron often fires for several different things (*polysemantic*); several features share it
(*superposition*), and each feature tends to mean one thing.
**Ask the class:** read a feature's top contexts: what does it detect? Does steering with it write more of that?

### Sampling
**What you see:** the next-token probabilities, and what temperature, top-k, top-p and min-p cut away
(greyed out); generations for several settings side by side from the same seed.
**Look for:** low temperature repeats itself (high repetition, low distinct-2); high temperature invents
nonsense (low mean log-probability).
**Step by step:** "Generate step by step" writes one token at a time with the knobs above: each token is
shaded by the probability it had when it was picked, and the table lists every step (token, its probability
after filtering and under the model, the running log-probability). Pale tokens are the surprising picks.
**Ask the class:** which column reads most like Shakespeare, and which number agrees?

### Heads
**What you see:** one role per head (previous token, self, local, focused, broad, induction, duplicate token,
or resting on the sink), measured on windows of the validation text and on a random sequence shown twice, not on
your prompt; the loss on the first and the second copy of that sequence; the places in the whole validation
text that excite a head or a neuron most; how one head's attention changed over training.
**Look for:** many heads park their attention on the first token when they have nothing to do (an *attention
sink*); the scores are shares of the attention left after it. A model with an **induction head** predicts the
second copy of a random sequence much better than the first: that is in-context copying.
**Ask the class:** the report card says a head is "previous token": how would you check it? (Knock it out on
the Experiments tab.)

### Experiments
**What you see:** the same prompt, seed and knobs with some heads, layers or neurons knocked out: the loss at
every position before and after, the next-token distribution, a continuation, and the loss on fixed
validation windows; the importance map of every head and FFN layer; a second model side by side in bits per
character.
**Look for:** **mean** ablation (the default) replaces the part's output with its average over the
validation text: the next layer still gets the kind of values it was trained on, and only what this part
says about *this* text is missing. **Zero** ablation also feeds the next layer a value it may never have
seen, so part of the damage is that shock, not the missing information.
**Ask the class:** the importance map names one head: knock it out. Which characters got harder to predict?
"""
