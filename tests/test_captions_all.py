"""Every figure function has a caption, and each caption names the known answer hidden in constructed data
(a pattern whose maximum is at a known key, a layer whose update is the biggest, a token that moved most)."""
import importlib
import inspect
import pkgutil
from types import SimpleNamespace

import numpy as np
import pytest

from explorer import figures
from explorer.teaching import captions as C
from explorer.teaching import captions_attribution as CA
from explorer.teaching import captions_blocks as CB
from explorer.teaching import captions_circuits as CCirc
from explorer.teaching import captions_classroom as CC
from explorer.teaching import captions_experiments as CE
from explorer.teaching import captions_features as CF
from explorer.teaching import captions_graph as CGraph
from explorer.teaching import captions_grokking as CG
from explorer.teaching import captions_progress as CP
from explorer.teaching import captions_roles as CR
from explorer.teaching import captions_training as CT
from model_core.analysis.heads import head_statistics
from model_core.analysis.roles import prompt_roles

TOKENS = list("abcdef")
NOT_CHARTS = {"style_figure", "lines_figure", "position_lines_figure", "histogram_pair_figure",  # builders
              "no_positions_figure", "note_figure"}  # a message in place of a chart ("this model has no position vectors")


def previous_token_pattern(T: int = 6) -> np.ndarray:
    """[T, T] attention where every query ≥ 1 looks only at the token before it."""
    p = np.zeros((T, T))
    p[0, 0] = 1
    p[np.arange(1, T), np.arange(T - 1)] = 1
    return p


def grid_with_best_at(layer: int, head: int, L: int = 2, H: int = 3) -> np.ndarray:
    """[L, H, T, T] uniform causal patterns, except a previous-token head at (layer, head)."""
    T = len(TOKENS)
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    patterns = np.broadcast_to(uniform, (L, H, T, T)).copy()
    patterns[layer, head] = previous_token_pattern(T)
    return patterns


def residual_case():
    pre = np.array([[1.0, 1.0], [2.0, 2.0]])  # [L, T]
    attn, mlp = np.array([[0.1, 0.1], [0.2, 0.2]]), np.array([[0.05, 0.05], [0.9, 0.9]])
    return pre, attn, mlp


def head_circuit_case() -> str:
    """Copying score +0.80; QK circuit where 'c' scores 'b' above itself; positions 1..4 look one back, 5 itself."""
    qk = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 2.0, 1.0]])
    positions = previous_token_pattern()
    positions[5, 5] = 2.0
    positions = np.where(np.tril(np.ones_like(positions)) > 0, positions, np.nan)
    return CCirc.head_caption(1, 0, 0.8, 1.0, qk, TOKENS[:3], "learned", positions)


def composition_case() -> str:
    """[2, 2, 2, 2] K-composition 0.1 between every layer-0 and layer-1 head, 0.8 for L0·H1 -> L1·H0, which is
    also the induction link; the head that copies most is L1·H1."""
    scores = np.zeros((2, 2, 2, 2))
    scores[0, :, 1, :] = 0.1
    scores[0, 1, 1, 0] = 0.8
    return CCirc.composition_caption(scores, "k", [(0, 1, 1, 0, 0.8)], {(0, 1): 0.9}, {(1, 0): 0.7},
                                  np.array([[0.1, -0.2], [0.3, 0.9]]))


def feature_case() -> str:
    """Feature 5 fires on 1.2 % of the tokens, 3 of its top 4 places on 'e'; it raises 'a' and 'b', lowers 'z'."""
    return CF.feature_caption(5, 0.012, 32768, ["a", "b"], [0.0, 0.7], ["e", "a", "e", "e"], ["a", "b"], ["z"],
                              [["neuron 3", 0.8, "none"]])


# memorised at step 100 (train accuracy 100 %), generalised at step 300 (test accuracy 99 %)
STEPS, TRAIN_ACC, TEST_ACC = [0, 100, 200, 300, 400], [0.5, 1.0, 1.0, 1.0, 1.0], [0.0, 0.1, 0.5, 0.99, 1.0]


def grokking_case() -> str:
    """p = 9: frequency 3 holds 9 of the embedding's 12 units of squared norm; neuron 1 follows frequency 3; the
    logits' biggest non-constant Fourier component is cos 2 × cos 2, but rows cos 1 and sin 1 carry more in all, so
    the 3 rows drawn are const, cos 1 and sin 1."""
    logits = np.zeros((5, 5))
    logits[0, 0], logits[3, 3], logits[1:3, 1:] = 10.0, 4.0, 3.0
    lab = SimpleNamespace(embedding_norms=np.array([0.0, 1.0, 1.0, 3.0, 1.0]), key_frequencies=[3],
                          test_accuracy=1.0, final=SimpleNamespace(restricted=0.01, excluded=5.0),
                          neuron_frequency=np.array([1, 3, 2]), logit_fourier=logits)
    return CG.lab_caption(lab, 1, CG.phases(STEPS, TRAIN_ACC, TEST_ACC), 9,
                          ["const", "cos 1", "sin 1", "cos 2", "sin 2"], 3)


# figure function name -> () -> (caption computed from constructed data, text it must contain)
CASES = {
    "sae_training_figure": lambda: (CF.sae_training_caption([10, 20], [4.0, 1.5], [32.0, 32.0], [0.2, 0.05],
                                                            [0.5, 0.9]),
                                    "the loss went from 4 to 1.5; on the latest batches 32.0 features are active"),
    "attention_grid_figure": lambda: (CR.prompt_roles_caption(*prompt_roles(grid_with_best_at(1, 2), [0, 1, 2, 3, 4, 5])),
                                      "1 previous-token head (L1·H2, 100%)"),
    "attention_overview_figure": lambda: (C.overview_caption(head_statistics(grid_with_best_at(1, 2)), 1),
                                          "the patterns of layer 1's 3 heads"),
    "live_attention_figure": lambda: (C.grid_caption(head_statistics(grid_with_best_at(0, 1))), "L0·H1 (100%)"),
    "attention_head_figure": lambda: (CR.head_on_prompt_caption(
        prompt_roles(grid_with_best_at(1, 2), [0, 1, 2, 3, 4, 5])[0][5],
        prompt_roles(grid_with_best_at(1, 2), [0, 1, 2, 3, 4, 5])[1], 6), "Head L1·H2 is a previous-token head: 100%"),
    "attention_steps_figure": lambda: (
        C.attention_steps_caption(np.where(np.tril(np.ones((6, 6))) > 0, 0.0, -np.inf), previous_token_pattern(),
                                  TOKENS), "hides 42% of the scores"),
    "query_attention_bars_figure": lambda: (C.query_attention_caption(previous_token_pattern(), TOKENS, 4),
                                            "puts the most attention, 100%, on 3:d"),
    "residual_norms_figure": lambda: (C.residual_caption(residual_case()[0], residual_case()[0] * 4,
                                                         residual_case()[1]), "grows from 1.0 to 8.0"),
    "update_norms_figure": lambda: (C.update_norms_caption(residual_case()[1], residual_case()[2]),
                                    "the biggest update is the FFN in layer 1 (norm 0.90)"),
    "update_vs_residual_figure": lambda: (C.update_vs_residual_caption([0.1, 0.5, 0.1], [1, 1, 1], TOKENS, 2),
                                          "changes 1:b the most (50%)"),
    "variance_figure": lambda: (C.variance_caption([2.0, 2.0], [4.0, 4.0], 1), "2.00× as much"),
    "residual_heatmap_figure": lambda: (
        C.residual_heatmap_caption(np.stack([np.ones((3, 4)), np.diag([1.0, 5.0, 1.0]) @ np.ones((3, 4))]),
                                   TOKENS[:3]), "1:b has the largest vector (norm 10.0)"),
    "logit_lens_figure": lambda: (C.logit_lens_caption(np.array([["x", "y"], ["a", "b"], ["a", "b"]]),
                                                       np.full((3, 2), 0.6)), "after L0"),
    "pca_scatter_figure": lambda: (C.embedding_caption([0.4, 0.2]), "first two components explain 60%"),
    "positional_heatmap_figure": lambda: (  # 8 positions on a half circle, 22.5° apart
        C.positional_caption(np.stack([np.cos(np.arange(8) * np.pi / 8), np.sin(np.arange(8) * np.pi / 8)], 1)),
        "Neighbouring positions have cosine similarity 0.92"),
    "embedding_norms_figure": lambda: (C.embedding_norms_caption([3.0, 3.0], [1.0, 1.0]),
                                       "Token embeddings are 3.0× the size of position embeddings"),
    "ffn_histograms_figure": lambda: (C.ffn_histogram_caption([1, 3], [-1.0, 0.0, 1.0], [0, 4], [-0.5, 0.0, 1.0]),
                                      "25% of FFN inputs are negative"),
    "neuron_sparsity_figure": lambda: (C.ffn_caption(np.array([0.5, 0.0, 0.25, 0.0]), 2),
                                       "active at 19% of positions; 2 of 4 neurons never fire"),
    "next_token_figure": lambda: (C.sampling_caption(np.array([0.5, 0.3, 0.2]), np.array([0.625, 0.375, 0.0]),
                                                     np.array([False, False, True]), TOKENS[:3]),
                                  "kept 2 of 3 tokens; the top token 'a' now has 62%"),
    "temperature_curve_figure": lambda: (C.temperature_caption(np.array([2.0, 0.0]), [0.5, 2.0], ["x", "y"]),
                                         "the top token 'x' gets 98%"),
    "loss_figure": lambda: (CT.loss_caption([10, 20], [3.0, 2.0], [10, 20], [3.2, 2.5], [3.0, 2.1], 65),
                            "Validation loss fell from 3.20 (step 10) to 2.50 (step 20)"),
    "token_index_figure": lambda: (C.token_index_caption([5, 7, 5], ["a", "b", "a"]), "most common is 'a' (id 5, 2"),
    "layernorm_effect_figure": lambda: (  # two positions of spread 1 and 4, each normalised to -1, +1
        CB.norm_effect_caption([[1.0, 3.0], [0.0, 8.0]], [[-1.0, 1.0], [-1.0, 1.0]], "RMSNorm", "layer 1"),
        "RMSNorm (layer 1) moves the values from mean 3.00, std 3.08 to mean 0.00, std 1.00. Before it, the "
        "positions' spreads range from 1.00 to 4.00"),
    "activation_functions_figure": lambda: (  # GELU lets -0.1 through at x = -1 and agrees with ReLU from x = 1
        CB.activation_caption({"ReLU": [0.0, 0.0, 1.0], "GELU": [-0.1, 0.0, 1.0]}, [-1.0, 0.0, 1.0], "GELU"),
        "differ most around x = ±1.00, by 0.10: GELU bends smoothly at 0 and lets small negative inputs through (its "
        "lowest output is -0.10), and above x = 1.0 the two agree within 0.01. This model uses GELU."),
    "role_map_figure": lambda: (CR.report_caption([SimpleNamespace(label="previous token")] * 2
                                                  + [SimpleNamespace(label="induction")], "the probe", []),
                                "Of 3 heads: 2 previous token, 1 induction"),
    "induction_loss_figure": lambda: (CR.induction_caption(4.0, 1.0, np.array([[0.1, 0.2], [0.9, 0.3]]), 50),
                                      "The strongest induction head is L1·H0 (90%)"),
    "induction_pattern_figure": lambda: (CR.induction_caption(4.0, 3.9, np.array([[0.1, 0.2]]), 50),
                                         "no induction head yet: the best induction score is 20% (L0·H1)"),
    "film_strip_figure": lambda: (CR.film_caption(1, 0, [0, 100, 200], [0.0, 0.1, 0.8]),
                                  "jumps the most between steps 100 and 200 (to 80%"),
    "role_scores_over_steps_figure": lambda: (CR.film_caption(0, 0, [0, 100], [0.1, 0.2]),
                                              "stays below 30% (at most 20%)"),
    "embedding_frames_figure": lambda: (CR.embedding_motion_caption(
        [np.zeros((3, 2)), np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])], [0, 500], ["a", "b", "c"]),
        "moves furthest in the picture is 'b' (5.00)"),
    "loss_change_figure": lambda: (CE.ablation_caption("head L1·H0", "mean", 2.0, 2.5, [0.0, 1.5], ["1:b", "2:c"],
                                                       ["a", "ab"]), "hardest to predict are 2:c (after “ab”, +1.50)"),
    "next_token_change_figure": lambda: (CE.ablation_caption("head L0·H1", "zero", 2.0, 2.0, [0.0], ["1:b"], ["a"]),
                                         "stays at 2.00"),
    "importance_figure": lambda: (CE.importance_caption(2.0, np.array([[0.0, 0.4], [0.1, 0.0]]), [0.2]),
                                  "Knocking out head L0·H1 hurts most"),
    "character_bits_figure": lambda: (CE.compare_caption(("x", "y"), (1.5, 2.0), [0.1, 2.5], ["0:a", "1:b"], True),
                                      "A predicts it better; B falls furthest behind at 1:b (+2.5 bits)"),
    "next_token_pair_figure": lambda: (CE.compare_caption(("x", "y"), (2.0, 2.0), [], [], False),
                                       "they predict it equally well"),
    "attention_pair_figure": lambda: (CE.compare_caption(("x", "y"), (2.5, 2.0), [-1.0], ["0:a"], True),
                                      "B predicts it better; B is furthest ahead at 0:a"),
    "attribution_figure": lambda: (
        CA.attribution_caption("The logit of x", 3.0, 3.0, np.array([[0.5, -2.0], [0.1, 0.2]]),
                               [("embeddings", 0.5), ("layer 0 attention", -1.5), ("layer 0 FFN", 4.0)]),
        "The head with the largest part, up or down, is L0·H1: -2.00, against it (it pushes the answer down); the largest part overall is layer 0 FFN (+4.00)"),
    "head_source_figure": lambda: (CA.source_caption("1.0", np.array([0.1, 0.9, 0.0]), TOKENS[:3]),
                                   "gets 90% of its part from reading b (+0.90)"),
    "class_loss_figure": lambda: (CC.class_caption(
        [{"name": "Ana", "steps": [1, 2, 300], "loss": [4.0, 3.0, 2.0]},
         {"name": "Ben", "steps": [1, 2, 200], "loss": [4.0, 3.5, 3.0]}]),
        "Lowest loss now: Ana (3.00 at step 300); highest: Ben (3.50 at step 200)"),
    "patching_figure": lambda: (CA.patching_caption("a head's output", "layer 1, head 0", 0.71, 5.2, -1.3, "x", "y"),
                                "restores at most 71% of that difference, at layer 1, head 0"),
    "feature_histogram_figure": lambda: (feature_case(), "**Feature 5:** Feature 5 fires on 1.20% of 32,768 "
                                                        "validation tokens, hardest on 'e' (3 of its top 4"),
    "logit_effects_figure": lambda: (feature_case(), "**Logit effects:** Written into the residual stream, feature 5 "
                                                    "raises the logits of 'a', 'b' most and lowers 'z'"),
    "log_density_figure": lambda: (  # the densest features listed; 2 of 5 never fire
        CF.listing_caption("an SAE", False, 0, "a", np.zeros(5), [0.0, 0.0, 0.01, 0.02, 0.03], 32768),
        "**How often they fire:** Of 5 features, 2 never fire on the validation text; half of the others fire on "
        "more than 2.00%"),
    "token_circuit_figure": lambda: (head_circuit_case(), "copying score **+0.80**: it copies"),
    "positional_figure": lambda: (head_circuit_case(), "80% of the query positions after the first score the "
                                                       "position just before highest"),
    "composition_figure": lambda: (composition_case(), "The strongest K-composition of the 4 head pairs is "
                                                       "L0·H1 → L1·H0 at 0.80 (the next pair scores 0.10"),
    "copying_figure": lambda: (composition_case(), "The head that copies most is L1·H1 (copying score +0.90)"),
    "induction_circuit_figure": lambda: (composition_case(), "previous-token head L0·H1 → induction head L1·H0"),
    "frequency_norms_figure": lambda: (grokking_case(), "**1 frequency** (3) carries 75%"),
    "neuron_map_figure": lambda: (grokking_case(), "Neuron 1 follows frequency 3"),
    "logit_fourier_figure": lambda: (grokking_case(), "a: cos 2 × b: cos 2 (norm 4, outside the 3 rows the chart draws"),
    "phase_curves_figure": lambda: (grokking_case(), "memorise steps 0–100; build the circuit steps 100–300; "
                                                     "clean up steps 300–400"),
    "accuracy_figure": lambda: (grokking_case(), "train accuracy reached 100 % at step 100, test accuracy 99 % at "
                                                 "step 300"),
    "graph_figure": lambda: (CGraph.graph_caption("hear me", "␣", 0.43, "L1 F5 at 3:e", 12),
                             "top next token is “␣” (43%). 12 features"),
    "top_logits_figure": lambda: (CGraph.intervention_caption("Setting L1 F5 at 3:e to 0", "␣", 0.43, 0.21, 0.25),
                                  "“␣” goes from 43% to 21% as the graph predicts"),
    "qk_pairs_figure": lambda: (CGraph.qk_caption(1, 2, "5:a", "3:b", 1.5, ("token", "position", 1.3),
                                                  ("token 'a'", "position", 1.2)),
                                "the cells add up to the score +1.50 (each row's and column's total is in its label). "
                                "The largest part, +1.30, is the query's token times the key's position; the largest "
                                "single pair, +1.20, is the query's token 'a' times the key's position"),
    "progress_figure": lambda: (CP.progress_caption(STEPS, {"induction": [0.0, 0.1, 0.2, 0.5, 0.6]}, 400),
                                "it crossed 0.3 at step 300"),
}


def figure_functions() -> set[str]:
    """Every public *_figure function of explorer.figures' modules."""
    names = set()
    for info in pkgutil.iter_modules(figures.__path__):
        module = importlib.import_module(f"explorer.figures.{info.name}")
        names |= {n for n, f in vars(module).items() if n.endswith("_figure") and inspect.isfunction(f)
                  and f.__module__ == module.__name__}
    return names - NOT_CHARTS


def test_every_figure_function_has_a_caption_case():
    assert figure_functions() == set(CASES)


@pytest.mark.parametrize("figure_name", sorted(CASES))
def test_caption_names_the_known_answer(figure_name):
    caption, expected = CASES[figure_name]()
    assert expected in caption, caption


def test_the_grokking_caption_says_the_key_frequencies_carry_the_answer_only_when_they_do():
    assert "the answer is carried by these frequencies" in grokking_case()  # restricted 0.01, excluded 5
    untrained = SimpleNamespace(embedding_norms=np.ones(3), key_frequencies=[1, 2], test_accuracy=0.16,
                                final=SimpleNamespace(restricted=1.8, excluded=1.99))
    assert "these frequencies do not carry the answer on their own (yet)" in CG.lab_caption(untrained, None, [], 5)


def test_the_training_caption_names_the_dead_window_and_the_layer_trained_last():
    sae = CF.sae_training_caption([10, 20], [4.0, 1.5], [32.0, 32.0], [0.2, 0.05], [0.5, 0.9], 10_240, 20_480)
    assert "the SAE explains 90.0%" in sae and "none fired on the last 10,240 tokens" in sae
    early = CF.sae_training_caption([10, 20], [4.0, 1.5], [32.0, 32.0], [0.0, 0.0], [0.5, 0.9], 10_240, 5_120)
    assert "not yet measured" in early and "5,120 seen" in early and "0.0% of its features" not in early
    layer = CF.sae_training_caption([110, 120], [19.4, 9.0], [8.0, 8.0], [0.1, 0.1], [0.5, 0.8], 1_000, 50_000,
                                    layer=1, start=100)
    assert layer.startswith("Layer 1, trained last") and "in its 20 steps the loss went from 19.4 to 9" in layer
    assert "layer 1's transcoder explains 80.0% of its FFN output's variance" in layer and "SAE" not in layer
