"""rope / none positions, qk-norm and relu²: hook points, the fused path, rotary's relative-position
property, causality, checkpoints, and the Embeddings view for models without position vectors."""
import pytest
import torch
import torch.nn.functional as F

from model_core.checkpoints.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from model_core.model.layers import CausalSelfAttention
from model_core.model.rope import Rotary
from tests.helpers import tiny_model, tokens

MODERN = dict(positional="rope", qk_norm=True, activation="relu2")
COMBOS = [MODERN, dict(positional="none"), dict(positional="rope"), dict(qk_norm=True),
          dict(activation="relu2", tie_weights=False), dict(positional="rope", qk_norm=True, norm_placement="post")]


def test_the_default_model_has_no_new_hook_points():
    names = tiny_model().hook_names
    assert "hook_pos_embed" in names
    assert not [n for n in names if "hook_rot_" in n or ".q_norm." in n or ".k_norm." in n]


def test_rope_and_qk_norm_add_their_hook_points_per_layer_in_order():
    names = tiny_model(**MODERN).hook_names
    attn = [n.removeprefix("blocks.1.attn.") for n in names if n.startswith("blocks.1.attn.")]
    assert attn == ["hook_q", "hook_k", "hook_v", "q_norm.hook_normalized", "k_norm.hook_normalized",
                    "hook_rot_q", "hook_rot_k", "hook_attn_scores_unmasked", "hook_attn_scores", "hook_pattern",
                    "hook_z"]
    assert "hook_pos_embed" not in names  # rotary adds no vector to the residual stream


@pytest.mark.parametrize("arch", COMBOS)
def test_fused_and_explicit_attention_agree(arch):
    model = tiny_model(**arch)
    idx = tokens(model)
    fused, _ = model(idx)
    for m in model.modules():
        if isinstance(m, CausalSelfAttention):
            m.force_explicit = True
    explicit, _ = model(idx)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)


def test_training_forward_takes_the_fused_path_unless_the_pattern_is_hooked(monkeypatch):
    model = tiny_model(**MODERN)
    calls = []
    original = CausalSelfAttention.explicit_attention
    monkeypatch.setattr(CausalSelfAttention, "explicit_attention",
                        lambda self, *a: calls.append(1) or original(self, *a))
    model(tokens(model))
    assert calls == []
    model.run_with_cache(tokens(model), names_filter="blocks.0.attn.hook_pattern")
    assert calls == [1]  # only the hooked layer materialises its pattern


@pytest.mark.parametrize("arch", COMBOS)
def test_no_position_leaks_from_the_future(arch):
    model = tiny_model(**arch)
    idx = tokens(model, T=6, batch=1)
    changed = idx.clone()
    changed[0, -1] = (changed[0, -1] + 1) % model.cfg.vocab_size
    torch.testing.assert_close(model(idx)[0][:, :-1], model(changed)[0][:, :-1])


def test_rotary_scores_depend_only_on_the_distance_between_positions():
    rotary = Rotary(block_size=16, dims=8)
    q, k = torch.randn(8), torch.randn(8)

    def rotated(v, pos):
        x = torch.zeros(1, 16, 1, 8)  # [batch, pos, head, d_head]
        x[0, pos, 0] = v
        return rotary(x)[0, pos, 0]

    def score(i, j):
        return rotated(q, i) @ rotated(k, j)

    torch.testing.assert_close(score(5, 2), score(12, 9))
    assert not torch.allclose(score(5, 2), score(5, 4))
    torch.testing.assert_close(rotary(torch.ones(1, 1, 1, 8)), torch.ones(1, 1, 1, 8))  # position 0: no turn


def test_hooked_activations_are_what_the_options_say():
    model = tiny_model(**MODERN)
    _, cache = model.run_with_cache(tokens(model))
    q = cache["blocks.0.attn.q_norm.hook_normalized"]  # [batch, pos, head, d_head]
    raw = cache["blocks.0.attn.hook_q"]
    torch.testing.assert_close(q, raw * torch.rsqrt(raw.pow(2).mean(-1, keepdim=True) + 1e-5))  # per head, gain 1
    rot_q = cache["blocks.0.attn.hook_rot_q"]
    torch.testing.assert_close(rot_q.norm(dim=-1), q.norm(dim=-1))  # a rotation keeps lengths
    pre, post = cache["blocks.0.mlp.hook_pre"], cache["blocks.0.mlp.hook_post"]
    torch.testing.assert_close(post, F.relu(pre) ** 2)
    torch.testing.assert_close(cache["blocks.0.hook_resid_pre"], cache["hook_embed"])  # nothing added


@pytest.mark.parametrize("arch", [MODERN, dict(positional="none", tie_weights=False)])
def test_checkpoints_round_trip_the_new_options(tmp_path, arch):
    model = tiny_model(**arch)
    loaded = load_checkpoint(save_checkpoint(Checkpoint(model), tmp_path / "ckpt")).model
    assert loaded.cfg == model.cfg
    idx = tokens(model)
    torch.testing.assert_close(loaded(idx)[0], model(idx)[0])


@pytest.mark.slow
def test_the_shipped_classic_model_still_loads():
    ckpt = load_checkpoint("explorer/assets/models/shakespeare")
    assert (ckpt.model.cfg.positional, ckpt.model.cfg.qk_norm, ckpt.model.cfg.activation) == ("learned", False, "gelu")


@pytest.mark.slow
@pytest.mark.parametrize("positional, says", [("rope", "rotary: no position vectors to show"),
                                              ("none", "no positional embedding")])
def test_embeddings_view_explains_missing_position_vectors(positional, says):
    from explorer.callbacks.embeddings import embeddings_view
    from explorer.state.inspected import Inspected
    from explorer.state.session import Session
    from model_core.data.tokenization import build_tokenizer

    tokenizer = build_tokenizer("char", "abcdefghijk")  # 11 characters: the tiny models' vocabulary
    session = Session(Inspected(Checkpoint(tiny_model(positional=positional, qk_norm=True), tokenizer), "tiny"))
    figures = embeddings_view(session, "abcde", "2", 1)
    position_pca, heatmap = figures[1], figures[4]
    for fig in (position_pca, heatmap):
        assert says in fig.layout.annotations[0].text


@pytest.mark.parametrize("positional, untrained, title", [("sinusoidal", False, "Sinusoidal positional encodings"),
                                                          ("learned", True, "Positional embeddings (untrained"),
                                                          ("learned", False, "Learned positional embeddings")])
def test_the_position_table_is_titled_for_what_the_model_has(positional, untrained, title):
    """Seed 004's sinusoidal table and seed 003's untrained one were both titled 'Learned positional embeddings'."""
    from explorer.callbacks.embeddings import position_table_kind
    from explorer.figures.embeddings import POSITION_TABLE_TITLES, positional_heatmap_figure
    from explorer.state.inspected import Inspected
    from explorer.state.session import Session

    inspected = Inspected(Checkpoint(tiny_model(positional=positional), None), "tiny")
    inspected.use(inspected.held, "tiny", untrained=untrained)
    kind = position_table_kind(Session(inspected))
    assert POSITION_TABLE_TITLES[kind].startswith(title)
    figure = positional_heatmap_figure(torch.zeros(5, 4).numpy(), kind=kind)
    assert figure.layout.title.text == f"{POSITION_TABLE_TITLES[kind]}: first 5 positions"
