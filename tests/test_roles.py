"""The head report card: role scores on hand-built patterns and the probes (an induction head forming in
training: tests/test_induction_training.py)."""
import numpy as np
import pytest
import torch

from model_core.analysis import head_statistics
from model_core.analysis.probes import ProbeError, head_report, repeat_probe, text_windows
from model_core.analysis.roles import SINK_REST, head_roles, induction_target, repeat_scores, target_share, text_scores
from tests.helpers import tiny_model

N = 6  # length of the repeated segment in the hand-built probes
TOKENS = np.array([[3, 1, 4, 0, 5, 2] * 2])  # [1, 2N]: six distinct tokens, shown twice


def previous_token_pattern(T: int) -> np.ndarray:
    p = np.eye(T, k=-1)
    p[0, 0] = 1
    return p


def induction_pattern(n: int) -> np.ndarray:
    """Queries of the second copy look at the token after their earlier occurrence; the rest at the sink."""
    T = 2 * n
    p = np.zeros((T, T))
    p[:, 0] = 1
    for i in range(n):
        p[n + i] = 0
        p[n + i, i + 1] = 1
    return p


def sink_pattern(T: int) -> np.ndarray:
    p = np.zeros((T, T))
    p[:, 0] = 1
    return p


def scores_of(pattern: np.ndarray, tokens=TOKENS) -> dict:
    """{role: [1, 1]} for one head and one sequence."""
    p = pattern[None, None, None]  # [L, H, B, T, T]
    return {**text_scores(p), **repeat_scores(p, tokens)}


def test_a_pure_previous_token_head_scores_one_on_previous_token_and_zero_on_induction():
    s = scores_of(previous_token_pattern(2 * N))
    assert s["previous token"][0, 0] == pytest.approx(1.0)
    assert s["induction"][0, 0] == pytest.approx(0.0)
    assert s["self"][0, 0] == pytest.approx(0.0)
    role = head_roles(s)[0]
    assert (role.label, role.score) == ("previous token", pytest.approx(1.0))
    assert "just before" in role.sentence and "100%" in role.sentence


def test_a_constructed_induction_pattern_scores_one_on_induction():
    s = scores_of(induction_pattern(N))
    assert s["induction"][0, 0] == pytest.approx(1.0)
    assert s["previous token"][0, 0] == pytest.approx(0.0)
    assert s["duplicate token"][0, 0] == pytest.approx(0.0)
    # the first copy rests on the sink, the second copy does not: not enough to call the head resting
    assert s["sink"][0, 0] < SINK_REST
    assert head_roles(s)[0].label == "induction"


def test_a_duplicate_token_pattern_is_not_induction():
    p = sink_pattern(2 * N)
    for i in range(N):
        p[N + i] = 0
        p[N + i, i] = 1 if i else 0
        p[N + i, 0] += 0 if i else 1  # query N's earlier copy is key 0, the sink
    s = scores_of(p)
    assert s["duplicate token"][0, 0] == pytest.approx(1.0) and s["induction"][0, 0] == pytest.approx(0.0)


def test_an_all_on_first_token_pattern_is_resting_on_the_sink():
    s = scores_of(sink_pattern(2 * N))
    role = head_roles(s)[0]
    assert role.label == "resting on the sink" and role.score == pytest.approx(1.0)
    assert "100%" in role.sentence and "switched off" in role.sentence


def test_a_head_that_stays_on_the_sink_on_repeats_too_is_resting_not_induction():
    """SmolLM2's L18·H8 puts 99.99% on the first token of plain text and of the repeated probe; the crumbs left land
    on induction targets. Only a head that wakes up on repeats (less than SINK_REST there) is an induction head."""
    p = sink_pattern(2 * N) * 0.999
    p[0, 0] = 1.0
    for q in range(N + 1, 2 * N):
        p[q, q - N + 1] += 0.001
    s = scores_of(p)
    assert s["induction"][0, 0] > 0.4 and s["repeat sink"][0, 0] > SINK_REST
    assert head_roles(s)[0].label == "resting on the sink"
    woke = {**s, "repeat sink": np.array([[0.5]])}  # the same head on text, but half awake on the repeats
    assert head_roles(woke)[0].label == "induction"


def test_roles_are_judged_on_the_attention_left_after_the_sink():
    """90% on the sink, 10% on the previous token: previous-token share of the non-sink mass is 1, but the
    head is resting; at 60% sink it is a previous-token head."""
    for sink, label in ((0.9, "resting on the sink"), (0.6, "previous token")):
        p = (1 - sink) * previous_token_pattern(2 * N)
        p[:, 0] += sink
        p[:2] = previous_token_pattern(2 * N)[:2]  # query 1's previous token is the sink itself
        s = scores_of(p)
        assert s["previous token"][0, 0] == pytest.approx(1.0)
        assert head_roles(s)[0].label == label


def test_a_query_that_rests_fully_on_the_sink_does_not_count_as_a_zero():
    """Half of the queries put everything on the sink, the others all on the previous token: the
    previous-token share of the non-sink attention is 1, not 0.5."""
    p = previous_token_pattern(2 * N)
    p[2::2] = 0
    p[2::2, 0] = 1
    assert target_share(p[None], np.eye(2 * N, k=-1, dtype=bool)[None]) == pytest.approx(1.0)
    no_sink = head_statistics(p)
    assert no_sink["prev_token_no_sink"] == pytest.approx(1.0)
    assert no_sink["self_no_sink"] == pytest.approx(0.0) and no_sink["entropy_no_sink"] == pytest.approx(0.0)


def test_the_self_score_ignores_query_0():
    assert head_statistics(previous_token_pattern(8))["self"] == pytest.approx(0.0)
    assert scores_of(previous_token_pattern(2 * N))["self"][0, 0] == pytest.approx(0.0)
    eye = np.eye(8)
    assert head_statistics(eye)["self"] == pytest.approx(1.0)


def test_a_uniform_head_is_broad_with_entropy_at_its_maximum():
    T = 2 * N
    p = np.tril(np.ones((T, T)))
    p /= p.sum(1, keepdims=True)
    s = scores_of(p)
    role = head_roles(s)[0]
    assert role.label == "broad" and role.score == pytest.approx(1.0)
    assert s["breadth"][0, 0] == pytest.approx(s["breadth max"][0, 0])


def test_a_head_that_keeps_to_one_token_no_habit_explains_is_focused_not_broad():
    """The Shakespeare model's L1·H3 parks on the last line break: no habit, but nothing like a spread-out head."""
    T = 2 * N
    p = previous_token_pattern(T)
    p[4:] = 0
    p[4:, 3] = 1  # every query after position 3 looks only at position 3
    role = head_roles(scores_of(p))[0]
    assert role.label == "focused" and role.score < 0.5 and "few earlier tokens" in role.sentence


def test_induction_target_marks_the_key_after_the_earlier_copy():
    target = induction_target(TOKENS)[0]
    for i in range(N):
        assert np.flatnonzero(target[N + i]).tolist() == [i + 1]
    assert not target[:N].any()  # the first copy has no earlier occurrences


def test_repeat_probe_shortens_to_the_block_size_and_says_so():
    probe = repeat_probe(vocab_size=50, block_size=64)
    assert probe.ids.shape == (8, 64) and probe.note == ""
    assert torch.equal(probe.ids[:, :32], probe.ids[:, 32:])
    assert all(len(set(row[:32].tolist())) == 32 for row in probe.ids)  # distinct tokens in a copy
    short = repeat_probe(vocab_size=50, block_size=20)
    assert short.length == 10 and short.ids.shape == (8, 20)
    assert "block size (20)" in short.note and "shortened to 10" in short.note
    with pytest.raises(ProbeError, match="block size of at least 4"):
        repeat_probe(vocab_size=50, block_size=3)


def test_text_windows_spread_over_the_text():
    ids = torch.arange(1000)
    windows = text_windows(ids, block_size=16, n_windows=5)
    assert windows.shape == (5, 16) and windows[0, 0] == 0 and windows[-1, -1] == 999


@pytest.mark.slow
def test_head_report_on_a_tiny_model():
    model = tiny_model()
    report = head_report(model, torch.randint(0, 11, (200,)))
    assert len(report.roles) == 4 and all(v.shape == (2, 2) for v in report.scores.values())
    assert report.role(1, 0).layer == 1 and report.role(1, 0).head == 0
    assert "shortened" in report.notes[0]  # block size 8 < 64
    alone = head_report(model, None)
    assert "no validation text" in alone.text_source
    assert not any(h.has_hooks() for h in model.hook_dict.values())


@pytest.mark.slow
def test_snapshots_track_induction_on_a_repeated_probe():
    from model_core.training.snapshots import Snapshot, take_snapshot

    model = tiny_model(block_size=16)
    snap = take_snapshot(model, [1, 2, 3], step=0)
    assert snap.head_stats["induction"].shape == (2, 2) and snap.head_stats["duplicate_token"].shape == (2, 2)
    assert np.allclose(Snapshot.from_dict(snap.to_dict()).head_stats["induction"], snap.head_stats["induction"],
                       atol=1e-4)
    assert "induction" not in take_snapshot(tiny_model(block_size=3), [1, 2], step=0).head_stats  # too short


def test_the_repeated_probe_draws_from_the_common_tokens_of_the_text():
    from model_core.analysis.probes import common_tokens

    ids = torch.tensor([5] * 60 + [7] * 30 + [2] * 9 + [9])  # token 9 is 1% of the text
    assert common_tokens(ids, share=0.99).tolist() == [5, 7, 2]
    probe = repeat_probe(vocab_size=12, block_size=8, length=3, pool=torch.tensor([5, 7, 2]))
    assert set(probe.ids.flatten().tolist()) <= {5, 7, 2}


@pytest.mark.slow
def test_the_shipped_induction_model_has_an_induction_head_in_layer_1():
    """The 'induction' demo model (python -m model_core.make_induction_asset): measured on the report card's
    probe (common Shakespeare characters shown twice), a layer-1 head copies and the loss drops."""
    from pathlib import Path

    from model_core.analysis.ablation import corpus_validation_ids
    from model_core.checkpoints.checkpoint import load_checkpoint

    path = Path(__file__).resolve().parent.parent / "explorer" / "assets" / "models" / "induction"
    if not (path / "config.json").exists():
        pytest.skip("the induction demo model is not built: python -m model_core.make_induction_asset")
    ckpt = load_checkpoint(path)
    report = head_report(ckpt.model, corpus_validation_ids(ckpt.corpus, ckpt.tokenizer))
    scores = report.scores["induction"]
    assert scores[1].max() > 0.3 and scores[0].max() < 0.1  # induction needs the layer-0 previous-token head
    assert "induction" in [r.label for r in report.roles]
    assert report.induction.second_copy_loss < report.induction.first_copy_loss - 1.0
