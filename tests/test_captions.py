"""Captions: the numbers and words in each sentence come from the data."""
from pathlib import Path

import numpy as np
import pytest

from explorer.figures.ffn import neuron_sparsity_figure
from explorer.figures.sampling import SEED_LOGITS
from explorer.teaching import captions as C
from explorer.teaching import captions_circuits as CCirc
from explorer.teaching import captions_roles as CR
from explorer.teaching import captions_training as CT
from explorer.teaching.captions_features import steering_caption
from model_core.analysis.roles import prompt_roles

TOKENS = list("abcdef")
T = len(TOKENS)


def previous_token_pattern(n: int) -> np.ndarray:
    p = np.eye(n, k=-1)
    p[0, 0] = 1  # query 0 can only see itself
    return p


def sink_pattern(n: int) -> np.ndarray:
    p = np.zeros((n, n))
    p[:, 0] = 1
    return p


def uniform_causal_pattern(n: int) -> np.ndarray:
    p = np.tril(np.ones((n, n)))
    return p / p.sum(1, keepdims=True)


def head_caption(pattern, ids, layer: int = 0, head: int = 0) -> str:
    """The Selected head caption of a one-head model whose only head is at (layer, head) of the label."""
    roles, scores = prompt_roles(np.asarray(pattern)[None, None], ids)
    role = roles[0]
    role.layer, role.head = layer, head
    return CR.head_on_prompt_caption(role, {k: np.broadcast_to(v, (layer + 1, head + 1)) for k, v in scores.items()},
                                     len(ids))


def test_the_selected_head_caption_names_its_role_on_the_prompt():
    ids = list(range(T))
    mixed = 0.78 * previous_token_pattern(T) + 0.22 * np.eye(T)  # queries >= 1: 78% back one, 22% on itself
    assert head_caption(mixed, ids, 1, 2) == (
        "Head L1·H2 is a previous-token head: 78% of the attention it does not park on the first token goes to the "
        "token just before. It puts 16% of all its attention on the first token (the sink).")  # query 1: its previous token is the first
    assert head_caption(np.eye(T), ids).startswith("Head L0·H0 is a self head: 100% of the attention")
    assert head_caption(sink_pattern(T), ids) == (
        "Head L0·H0 is resting on the sink: it puts 100% of its attention on the first token, a parking place for a "
        "head with nothing to do here.")
    assert head_caption(np.ones((1, 1)), [0]) == "Head L0·H0 has only one token to look at, so it attends to itself."


def test_a_head_that_copies_on_a_repeated_prompt_is_an_induction_head_despite_its_sink():
    """Half on the first token, half on the token after the earlier copy: the caption agrees with the report card
    (the lesson 'A real model' names such a head an induction head)."""
    n = 6
    ids = list(range(1, n + 1)) * 2
    p = 0.5 * np.eye(2 * n)  # the first copy: half on itself, half on the sink
    p[:, 0] += 0.5
    p[0, 0] = 1.0
    for q in range(n, 2 * n):  # the second copy: half on the token after the earlier copy
        p[q, q], p[q, q - n + 1] = 0.0, 0.5
    text = head_caption(p, ids)
    assert text.startswith("Head L0·H0 is an induction head: 100% of the attention it does not park on the first "
                           "token goes to the token right after an earlier copy")
    assert "puts 50% of all its attention on the first token" in text


def test_a_spread_out_head_is_broad_in_bits():
    text = head_caption(uniform_causal_pattern(12), [0] + list(range(1, 12)))
    assert text.startswith("Head L0·H0 is broad: it spreads its attention over many earlier tokens (") and "bits" in text
    assert "0 bits is one token" in text


def test_the_roles_caption_counts_each_role_with_its_strongest_head():
    ids = list(range(T))
    patterns = np.stack([np.stack([previous_token_pattern(T), sink_pattern(T), 0.9 * previous_token_pattern(T)
                                   + 0.1 * np.eye(T)])])  # [1, 3, T, T]
    roles, scores = prompt_roles(patterns, ids)
    assert CR.prompt_roles_caption(roles, scores).startswith(
        "Roles on this prompt: 2 previous-token heads (strongest L0·H0, 100%); 1 head resting on the sink (L0·H1, "
        "100% on the first token). A head rests on the sink when 70% or more")


def test_attention_steps_and_query_captions():
    scores = np.zeros((4, 4))
    scores[np.triu_indices(4, 1)] = -np.inf  # 6 of 16 masked
    assert C.attention_steps_caption(scores, previous_token_pattern(4), list("abcd")) == (
        "The causal mask hides 38% of the scores (keys in the future); after softmax each row sums to 1, and the "
        "sharpest query, 1:b, puts 100% on 0:a. " + C.Z_EXPLAINED)
    assert C.attention_steps_caption(np.zeros((1, 1)), np.ones((1, 1)), ["a"]).startswith(
        "With a single token there is nothing to mask")
    text = C.query_attention_caption(previous_token_pattern(T), TOKENS, 3)
    assert text == "3:d can see keys 0:a to 3:d and puts the most attention, 100%, on 2:c (the previous token)."
    habit = previous_token_pattern(T)
    habit[3] = np.eye(T)[3]  # one row on itself, the others on the previous token
    assert C.query_attention_caption(habit, TOKENS, 3) == (
        f"3:d can see keys 0:a to 3:d and puts the most attention, 100%, on 3:d (itself). Over all its rows this "
        f"head puts {(T - 2) / (T - 1):.0%} on the previous token (a previous-token head): this row is an exception.")
    assert C.query_attention_caption(np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None], TOKENS, 3).endswith(
        "on 0:a (the first token).")  # an even spread: the first of the ties, and no habit to compare with


def test_grid_caption_finds_previous_token_and_sink_heads():
    prev, first, entropy = np.full((2, 3), 0.1), np.full((2, 3), 0.1), np.ones((2, 3))
    prev[1, 2], first[0, 0] = 0.81, 0.7
    assert C.grid_caption({"prev_token": prev, "first_token": first, "entropy": entropy}) == (
        "The strongest previous-token head is L1·H2 (81%); L0·H0 mostly attends to the first token (sink, 70%).")
    first[0, 0], entropy[1, 0] = 0.2, 3.2  # no sink head any more: the widest head is named instead
    assert C.grid_caption({"prev_token": prev, "first_token": first, "entropy": entropy}) == (
        "The strongest previous-token head is L1·H2 (81%); L1·H0 spreads its attention most widely (3.2 bits).")
    entropy[:] = 0.1  # every head on about one token: none is said to spread widely
    entropy[0, 1] = 0.3
    assert C.grid_caption({"prev_token": prev, "first_token": first, "entropy": entropy}).endswith(
        "every head keeps each row on about one token (at most 0.3 bits).")


def test_grid_caption_of_a_one_head_model_compares_it_with_nothing():
    one = {"prev_token": np.array([[0.25]]), "first_token": np.array([[0.6]]), "entropy": np.array([[0.0]])}
    assert C.grid_caption(one) == ("The only head, L0·H0, puts 25% of its attention on the previous token and 60% on "
                                   "the first; each row keeps its attention on about one token (0.0 bits).")
    one["entropy"] = np.array([[1.58]])
    assert C.grid_caption(one).endswith("its rows spread their attention over about 3 tokens (1.6 bits).")


def test_overview_caption_says_what_its_maps_show():
    prev, itself, first = np.full((2, 3), 0.1), np.full((2, 3), 0.2), np.full((2, 3), 0.6)
    first[1, 2] = 0.9
    assert C.overview_caption({"prev_token": prev, "self": itself, "first_token": first}, 1) == (
        "The three maps give each of the 6 heads its whole share of attention on the previous token, on itself and "
        "on the first token (up to 90%, L1·H2); below, the patterns of layer 1's 3 heads.")


def test_residual_captions():
    pre = np.array([[1.2, 1.2], [3.0, 3.0], [5.0, 5.0], [7.0, 7.0]])
    post = pre + np.array([[1.8], [2.0], [2.0], [0.9]])
    attn = 0.14 * pre
    assert C.residual_caption(pre, post, attn) == ("The residual stream grows from 1.2 to 7.9 across 4 layers; "
                                                   "attention updates are 14% of its size.")
    assert C.residual_caption(pre[:1], pre[:1] * 0.5, attn[:1]).startswith(
        "The residual stream shrinks from 1.2 to 0.6 across 1 layer;")
    assert C.update_norms_caption(np.ones((3, 2)), np.array([[2, 2], [0.5, 0.5], [3, 3]])) == (
        "The FFN writes more than attention in 2 of 3 layers; the biggest update is the FFN in layer 2 (norm 3.00).")
    # update / residual = 1/4, 1/4, 3/4: 42% on average, most at position 2
    assert C.update_vs_residual_caption(np.array([1, 1, 3.0]), np.array([4, 4, 4.0]), list("abc"), 1) == (
        "In layer 1 the attention update is 42% of the residual's size on average; it changes 2:c the most (75%).")
    assert C.variance_caption(np.full(3, 2.0), np.full(3, 1.0), 0) == (
        "In layer 0 the attention output varies 0.50× as much as the residual stream it is added to, so each "
        "layer nudges the stream.")
    assert C.variance_caption(np.full(3, 1.0), np.full(3, 3.0), 2).endswith("3.00× as much as the residual "
                                                                            "stream it is added to, so each "
                                                                            "layer strongly rewrites the stream.")
    stream = np.ones((3, 2, 4))  # every vector has norm 2; at the end 6 and 12
    stream[-1] *= 3
    stream[-1, 1] *= 2
    assert C.residual_heatmap_caption(stream, list("ab")) == (
        "Across layers the stream's size changes 4.5× on average; at the end 1:b has the largest vector (norm 12.0).")


def test_logit_lens_caption_reports_where_the_prediction_settles():
    # final row = final prediction; position 0 settles after L0, 1 after L1, 2 after L0: on average after L0
    labels = np.array([["a", "x", "c"], ["x", "x", "d"], ["x", "y", "d"]])
    assert C.logit_lens_caption(labels, np.full((3, 3), 0.5)) == (
        "On average the final prediction becomes (and stays) the top guess after L0; it is already there right "
        "after the embedding at 0 of 3 positions. Final confidence: 50%.")
    settled = np.array([["x", "y"], ["x", "y"]])
    assert C.logit_lens_caption(settled, np.full((2, 2), 0.9)) == (
        "On average the final prediction becomes (and stays) the top guess right after the embedding; it is "
        "already there right after the embedding at 2 of 2 positions. Final confidence: 90%.")


def test_embedding_captions():
    assert C.embedding_caption([0.2, 0.11]) == "The first two components explain 31% of the variance."
    assert C.embedding_caption([0.2, 0.1, 0.05]) == "The first three components explain 35% of the variance."
    assert C.embedding_norms_caption(np.full(4, 2.0), np.ones(4)) == (
        "Token embeddings are 2.0× the size of position embeddings on average (2.00 vs 1.00), so they dominate "
        "the input.")
    assert C.embedding_norms_caption(np.full(4, 0.5), np.full(4, 2.0)).startswith(
        "Position embeddings are 4.0× the size of token embeddings on average (2.00 vs 0.50)")
    assert C.embedding_norms_caption(np.full(4, 0.08), np.full(4, 0.081)) == (  # seed 003's untrained model
        "Token and position embeddings are about the same size on average (0.08 and 0.08): neither dominates the input.")


def test_positional_caption_states_neighbour_and_distant_similarity():
    angle = 0.2 * np.arange(16)  # positions on a circle: cosine similarity of p and q is cos(0.2 |p - q|)
    circle = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    far = np.mean([np.cos(0.2 * abs(p - q)) for p in range(16) for q in range(16) if abs(p - q) >= 8])
    assert C.positional_caption(circle) == (f"Neighbouring positions have cosine similarity {np.cos(0.2):.2f}, "
                                            f"distant ones {far:.2f}: the model has learned a smooth sense of order.")
    assert C.positional_caption(np.eye(8)) == ("Neighbouring positions have cosine similarity 0.00, distant ones "
                                               "0.00: no smooth order yet.")  # orthogonal: no order at all
    assert C.positional_caption(np.eye(2)) == "Too few positions to compare neighbours."
    # fixed waves or an untrained model's random vectors: nothing learned, whatever the similarities
    assert C.positional_caption(circle, "sinusoidal").endswith("(nothing here was learned).")
    assert C.positional_caption(circle, "untrained").endswith("random vectors of an untrained model, so no order yet.")


def test_ffn_captions():
    fraction = np.array([0.0] * 12 + [0.5] * 500)  # mean 250 / 512 = 49%
    assert C.ffn_caption(fraction, 12) == ("On average a neuron is active at 49% of positions; 12 of 512 neurons "
                                           "never fire on this text (dead).")
    pre_h, pre_e = np.array([30, 20, 25, 25]), np.array([-2.0, -1.0, 0.0, 1.0, 2.0])  # 50 of 100 below zero
    post_h, post_e = np.array([0, 60, 40]), np.array([-0.3, -0.17, 1.0, 2.0])  # lowest non-empty bin: -0.17
    assert C.ffn_histogram_caption(pre_h, pre_e, post_h, post_e, "GELU") == (
        "50% of FFN inputs are negative; GELU squashes them towards zero (outputs stay above -0.17).")
    assert C.top_tokens_caption(np.array([0, 3, 1, 2]), np.array([3, 2, 1.0, 0.5]), list("abca")) == (
        "This neuron fires hardest at 0:a (3.00); 3 of its top 4 positions reach a quarter of that, on 'a' (2), 'b'.")
    assert C.top_tokens_caption(np.array([2, 0]), np.array([4.0, 0.5]), list("abc")) == (
        "This neuron fires hardest at 2:c (4.00); none of its other top 1 positions reaches a quarter of that.")
    assert C.top_tokens_caption(np.array([1, 0]), np.array([-0.01, -0.2]), list("ab")) == (
        "This neuron does not fire on this prompt (its largest activation is -0.01).")


def test_the_ffn_caption_and_its_charts_title_give_the_same_numbers():
    fraction = np.array([0.0] * 12 + [0.5] * 500)
    title = neuron_sparsity_figure(fraction, np.array([0.2, 1 - fraction.mean()]), layer=1).layout.title.text
    caption = C.ffn_caption(fraction, int((fraction == 0).sum()))
    assert "12 of 512 dead" in title and "12 of 512 neurons never fire" in caption
    assert "mean active share 49%" in title and "active at 49% of positions" in caption


def composition_scores_2x2() -> np.ndarray:
    """[2, 2, 2, 2] K-composition of a 2-layer, 2-head model as a trained induction model scores it: the four
    layer-0 -> layer-1 pairs score 0.22 to 0.36 (median 0.28), the strongest L0·H0 -> L1·H1."""
    scores = np.zeros((2, 2, 2, 2))
    scores[0, 0, 1, 1], scores[0, 1, 1, 1], scores[0, 0, 1, 0], scores[0, 1, 1, 0] = 0.36, 0.31, 0.25, 0.22
    return scores


def test_the_composition_caption_sets_the_strongest_pair_against_the_others_without_undercutting_it():
    """The step that shows the induction circuit read 'L0·H0 → L1·H1 (0.36; the median pair scores 0.28, about
    what heads that do not compose score)': the circuit's own pair, called no better than chance."""
    scores, copying = composition_scores_2x2(), np.array([[0.1, 0.2], [0.3, 0.9]])

    def caption(kind, link):
        return CCirc.composition_caption(scores, kind, [link], {link[:2]: 0.9}, {link[2:4]: 0.9}, copying)

    text = caption("k", (0, 0, 1, 1, 0.36))
    assert text.startswith("The strongest K-composition of the 4 head pairs is L0·H0 → L1·H1 at 0.36 (the next "
                           "pair scores 0.31, the median pair 0.28).")
    assert "(K-composition 0.36, the strongest pair)" in text and "do not compose" not in text
    assert "(K-composition 0.31, 2nd strongest of 4 pairs)" in caption("k", (0, 1, 1, 1, 0.31))
    assert "(K-composition 0.31):" in caption("q", (0, 1, 1, 1, 0.31))  # a Q chart: its ranks are not K's
    assert len(CCirc.later_pair_scores(np.ones((3, 2, 3, 2)))) == 12  # 4 head pairs for each of 3 layer pairs
    one = CCirc.composition_caption(np.full((2, 1, 2, 1), 0.4), "k", [], {}, {}, np.array([[0.1], [0.3]]))
    assert one.startswith("The strongest K-composition is L0·H0 → L1·H0 at 0.40, the only pair of heads in different "
                          "layers.")


def test_sampling_and_generation_captions():
    before = np.array([0.48, 0.2, 0.12, 0.1, 0.1])
    removed = np.array([False, False, True, True, True])
    after = np.where(removed, 0, before) / before[~removed].sum()
    text = C.sampling_caption(before, after, removed, ["␣", "e", "a", "b", "c"])
    assert text == "Filtering kept 2 of 5 tokens; the top token '␣' now has 71% (was 48%)."
    assert C.sampling_caption(before, before, np.zeros(5, bool), list("abcde")) == (
        "No filtering: all 5 tokens stay possible; the top token 'a' has 48%.")
    assert C.temperature_caption(np.array([2.0, 1.0, 0.0]), [0.5, 2], list("xyz")) == (
        "At temperature 0.5 the top token 'x' gets 87%; at 2, only 51%: the lower the temperature, the larger its "
        "share.")  # softmax([4, 2, 0])[0] and softmax([1, 0.5, 0])[0]
    assert C.temperature_caption(np.array([2.0, 1.0, 0.0]), [0.5, 1, 2], list("xyz"), current=2) == (
        "At temperature 0.5 the top token 'x' gets 87%; at 1, 67%; at 2 (the slider's), only 51%: the lower the "
        "temperature, the larger its share.")  # the slider's temperature is named, whatever the others are
    assert C.temperature_caption(np.zeros(3), [0.5, 2], list("xyz")).endswith("at 2, 33%.")  # a tie: no change
    seed = np.exp(SEED_LOGITS - SEED_LOGITS.max())
    cold, hot = (seed ** (1 / t) / (seed ** (1 / t)).sum() for t in (0.1, 3))
    assert C.temperature_caption(None, [0.1, 3]).startswith(
        f"At temperature 0.1 the largest logit gets {cold.max():.0%}; at 3, only {hot[cold.argmax()]:.0%}")
    steps = [{"token_label": "a", "prob": 0.5, "logprob": -0.7}, {"token_label": "q", "prob": 0.04, "logprob": -3.5}]
    assert C.generation_caption(steps) == ("Generated 2 tokens; the picks had 27% probability on average, and the "
                                           "least likely was 'q' at step 2 (4%).")
    assert C.generation_caption([]) == "Nothing generated yet."
    flatter = np.array([0.3, 0.2, 0.2, 0.15, 0.15])  # temperature 2, nothing cut: the caption says what moved
    assert C.sampling_caption(before, flatter, np.zeros(5, bool), list("abcde")) == (
        "Nothing is cut: all 5 tokens stay possible; the temperature moves the top token 'a' from "
        f"{before[0]:.0%} to 30%.")


def test_data_and_training_captions():
    assert C.token_index_caption(np.array([1, 2, 1, 3]), list("abac")) == (
        "4 positions use 3 distinct token ids; the most common is 'a' (id 1, 2 times).")
    text = CT.loss_caption(np.arange(1, 101), np.ones(100), [0, 100], np.array([4.17, 1.62]),
                           np.array([4.1, 1.54]), vocab_size=65)
    assert text == ("Validation loss fell from 4.17 (step 0) to 1.62 (step 100); at step 100 the train–validation gap "
                    f"is 0.08 (a growing gap means overfitting). Random guessing would score {np.log(65):.2f} (ln 65).")
    growing = CT.loss_caption(np.arange(1, 201), np.ones(200), [0, 100, 200], [4.17, 1.62, 1.70], [4.1, 1.54, 1.20],
                              vocab_size=65)
    assert "gap is 0.50, up from 0.08 at step 100: growing, a sign of overfitting." in growing
    level = CT.loss_caption(np.arange(1, 201), np.ones(200), [0, 200], [4.17, 1.62], [4.1, 1.623], vocab_size=65)
    assert "the train–validation gap is 0.00 (" in level  # -0.003: never "-0.00"
    shrinking = CT.loss_caption(np.arange(1, 201), np.ones(200), [0, 100, 200], [4.17, 9.0, 0.1], [4.1, 0.0, 0.05],
                                vocab_size=65)
    assert "gap is 0.05, down from 9.00 at step 100." in shrinking and "overfitting" not in shrinking
    level = CT.loss_caption(np.arange(1, 201), np.ones(200), [0, 100, 200], [4.17, 1.60, 1.55], [4.1, 1.63, 1.55],
                            vocab_size=65)  # the student walk's "gap 0.00, up from -0.03 ... overfitting"
    assert "gap is 0.00, up from -0.03 at step 100: the two losses are level (within 0.03), no sign of overfitting." \
        in level and "a sign of overfitting" not in level
    creeping = CT.loss_caption(np.arange(1, 201), np.ones(200), [0, 100, 200], [4.17, 1.70, 1.70], [4.1, 1.50, 1.49],
                               vocab_size=65)  # clearly positive, hardly growing
    assert "gap is 0.21, up from 0.20 at step 100." in creeping and "overfitting" not in creeping
    assert CT.loss_caption(np.arange(20), np.r_[4.0, np.full(9, 3.0), np.full(10, 1.0)]) == (
        "Training loss fell from 4.00 (the first batch, step 0) to 1.00 (mean of the last 2 of 20 steps).")
    no_split = CT.loss_caption(np.arange(1, 301), np.full(300, 0.2), [0, 100, 300], [1.62, 0.4, 0.08], None, 5,
                               evaluated="Loss on the training text")  # the curve the chart draws in bold
    assert no_split.startswith("Loss on the training text fell from 1.62 (step 0) to 0.08 (step 300).")


def test_loss_caption_never_sets_a_stale_evaluation_against_fresh_batches():
    """Paused at step 140 with evaluations at steps 0 and 100 only: each number names its step, the batch loss is
    told as the batches' own, and the untrained model's loss above guessing is explained."""
    steps, batches = np.arange(1, 141), np.r_[np.full(120, 2.5), np.full(20, 1.88)]
    text = CT.loss_caption(steps, batches, [0, 100], [4.21, 2.35], [4.2, 2.3], vocab_size=65)
    assert "from 4.21 (step 0) to 2.35 (step 100)" in text and "over 140 steps" not in text
    assert "The training batches' loss is 1.88 now (mean of the last 20, step 140)" in text
    assert "4.21 at step 0 is above it because an untrained model is more confidently wrong than uniform guessing" \
        in text
    only_start = CT.loss_caption(np.arange(1, 9), np.full(8, 3.0), [0], [4.21], [4.2], vocab_size=65)
    assert only_start.startswith("Validation loss 4.21 (step 0).") and "gap" not in only_start
    assert "fell" not in only_start and "(mean of the last 8, step 8)" in only_start
    below = CT.loss_caption(np.arange(1, 11), np.full(10, 3.0), [0, 10], [4.0, 3.0], None, vocab_size=65)
    assert "rose" not in below and "untrained" not in below  # 4.0 < ln 65: nothing to explain
    level = CT.loss_caption([5], [3.0], [0, 5], [np.log(27) + 0.001, 3.0], None, vocab_size=27)
    assert "untrained" not in level  # 3.30 against 3.30 as printed: nothing to explain either
    assert "rose from 2.00 (step 10) to 2.50 (step 20)" in CT.loss_caption([20], [2.0], [10, 20], [2.0, 2.5])


CAPTION_FUNCTIONS = sorted(n for n in dir(C) if n.endswith("_caption") and callable(getattr(C, n)))


@pytest.mark.parametrize("name", CAPTION_FUNCTIONS)
def test_every_caption_function_is_checked_here_against_constructed_data(name):
    """A new caption function needs a test above that states its numbers, not only a docstring."""
    assert getattr(C, name).__doc__, f"{name} needs a one-line docstring"
    assert f"C.{name}(" in Path(__file__).read_text(), f"no test above calls C.{name} on constructed data"


def test_steering_caption_says_where_the_two_texts_part():
    assert steering_caption(830, 2, 15.33, "abc", "abc").endswith("too weak to change a single choice.")
    assert steering_caption(830, 2, 15.33, "abXd", "abYd").endswith("agree for their first 2 characters, then part.")
    assert steering_caption(830, 4, 15.33, "Thou", "RRRR").endswith("differ from their first character on.")
    assert steering_caption(830, 4, 15.33, "", "R").startswith("Steering adds 4 × 15.33 (feature 830's")
