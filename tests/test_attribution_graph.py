"""Transcoders and attribution graphs (model_core.features.transcoder*, model_core.analysis.attribution_graph and
friends): the invariants that make a graph mean something, on a small random model with random transcoders (an
untrained model has every kind of edge), and the shipped Shakespeare model with its shipped transcoders."""
import json
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file, save_file

from model_core import GPT, GPTConfig
from model_core.analysis.attribution_graph import attribution_graph, logit_targets, sources_of
from model_core.analysis.graph_interventions import direct_effects, intervene
from model_core.analysis.graph_json import circuit_tracer_json
from model_core.analysis.graph_pruning import graph_scores, influence, logit_weights, prune_graph, shares
from model_core.analysis.qk_attribution import qk_attribution
from model_core.analysis.replacement import ReplacementError, cached_pass, frozen_forward
from model_core.features.training import SAETrainConfig
from model_core.features.transcoder import Transcoder, TranscoderConfig
from model_core.features.transcoder_format import TranscoderFileError, load_transcoders, save_transcoders
from model_core.features.transcoder_training import TranscoderTrainer, collect_pairs

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "explorer/assets/transcoders/shakespeare"


def tolerance(reference: torch.Tensor) -> float:
    """float32 sums differ in order between CPUs: scale the tolerance by the magnitudes summed."""
    return 1e-5 * (1.0 + float(reference.abs().max()))


@pytest.fixture(scope="module")
def small():
    """(model, transcoders, tokens): 2 layers, random, transcoders with skip connections and k 6 of 48."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=20, block_size=16, d_model=24, n_heads=3, n_layers=2, d_mlp=48,
                          init="1/sqrt(d_model)")).eval()  # weights of std d_model^-0.5: a stream of a trained model's size
    transcoders = []
    for layer in range(2):
        tc = Transcoder(TranscoderConfig(24, 48, 6, layer, skip=True))
        with torch.no_grad():
            tc.b_enc.normal_(0, 0.1)
            tc.b_dec.normal_(0, 0.1)
            tc.W_skip.normal_(0, 0.05)
        transcoders.append(tc.eval())
    return model, transcoders, [0, 5, 3, 9, 3, 7, 11, 2, 5, 3]


@pytest.fixture(scope="module")
def small_graph(small):
    model, transcoders, tokens = small
    return attribution_graph(model, transcoders, tokens)


def test_the_frozen_replacement_model_equals_the_real_pass(small):
    model, transcoders, tokens = small
    run = cached_pass(model, torch.tensor(tokens))
    sources = sources_of(run, transcoders)
    mlp_in, final = frozen_forward(model, run, transcoders, model.embed.weight[torch.tensor(tokens)][None],
                                   sources.ffn_rest[None])
    logits = model.unembed(final)[0]
    assert torch.allclose(logits, run.logits, atol=tolerance(run.logits))
    for layer in range(2):
        assert torch.allclose(mlp_in[layer][0], run.mlp_in[layer], atol=tolerance(run.mlp_in[layer]))


def test_every_target_is_its_row_plus_what_no_node_explains(small, small_graph):
    """The graph with no pruning reproduces each feature's pre-activation and each demeaned logit from the error,
    token and feature nodes: the row sum plus a constant computed on its own (the replacement model with every
    node's vector set to zero: biases, position vectors, position 0's FFN outputs)."""
    model, transcoders, tokens = small
    g = small_graph
    run = cached_pass(model, torch.tensor(tokens))
    sources = sources_of(run, transcoders)
    rest = torch.stack([tc.b_dec.detach().expand(len(tokens), -1) for tc in transcoders]).clone()  # [L, T, D]
    rest[:, 0] = sources.ffn_rest[:, 0]  # position 0 is not a node: its FFN output stays as it was
    with torch.no_grad():
        mlp_in, final = frozen_forward(model, run, transcoders, torch.zeros(1, len(tokens), 24), rest[None])
    layers, positions, features = g.active_features.unbind(1)
    for i in range(g.n_features):
        tc = transcoders[int(layers[i])]
        constant = mlp_in[int(layers[i])][0, positions[i]] @ tc.W_enc[features[i]] + tc.b_enc[features[i]]
        assert float(g.adjacency[i].sum() + constant) == pytest.approx(float(g.values[i]), abs=tolerance(g.values))
    logits = model.unembed(final)[0, -1]
    demeaned = logits - logits.mean()
    for j, token in enumerate(g.logit_tokens.tolist()):
        row = g.adjacency[g.logit_start + j]
        assert float(row.sum() + demeaned[token]) == pytest.approx(float(g.values[g.logit_start + j]),
                                                                   abs=tolerance(g.values))
    assert torch.equal(g.adjacency[g.error_start:g.logit_start], torch.zeros_like(g.adjacency[g.error_start:g.logit_start]))


def test_an_edge_is_the_effect_of_doubling_its_source_with_everything_else_frozen(small, small_graph):
    model, transcoders, tokens = small
    g = small_graph
    layer0 = (g.active_features[:, 0] == 0) & (g.active_features[:, 1] < len(tokens) - 1)
    source = int(layer0.nonzero()[0])
    layer, pos, feature = g.active_features[source].tolist()
    before_pre, before_logits = direct_effects(model, transcoders, tokens, [])
    after_pre, after_logits = direct_effects(model, transcoders, tokens,
                                             [(layer, pos, feature, 2 * float(g.activations[source]))])
    later = (g.active_features[:, 0] > layer).nonzero().flatten()
    assert len(later) > 0
    for target in later.tolist():
        l, p, f = g.active_features[target].tolist()
        moved = after_pre[l, p, f] - before_pre[l, p, f]
        assert float(moved) == pytest.approx(float(g.adjacency[target, source]), abs=tolerance(before_pre))
    moved = (after_logits[-1] - after_logits[-1].mean()) - (before_logits[-1] - before_logits[-1].mean())
    for j, token in enumerate(g.logit_tokens.tolist()):
        assert float(moved[token]) == pytest.approx(float(g.adjacency[g.logit_start + j, source]),
                                                    abs=tolerance(before_logits))


def test_interventions_the_graph_predicts_and_the_real_model_gives(small, small_graph):
    model, transcoders, tokens = small
    g = small_graph
    nothing = intervene(model, transcoders, tokens, [])
    assert torch.allclose(nothing.predicted, nothing.original, atol=tolerance(nothing.original))
    assert torch.allclose(nothing.real, nothing.original, atol=tolerance(nothing.original))
    last = (g.active_features[:, 1] == len(tokens) - 1) & (g.active_features[:, 0] == 1)
    node = int(last.nonzero()[0])
    layer, pos, feature = g.active_features[node].tolist()
    # a feature of the last layer at the last position: nothing after it but the final norm and the logits; the
    # graph's prediction is its edges, the real model differs only by the final norm's denominator moving
    zeroed = intervene(model, transcoders, tokens, [(layer, pos, feature, 0.0)])
    change, real_change = zeroed.predicted - nothing.original, zeroed.real - nothing.original
    assert float(torch.nn.functional.cosine_similarity(change, real_change, dim=0)) > 0.9
    demeaned = change - change.mean()
    for j, token in enumerate(g.logit_tokens.tolist()):
        assert float(demeaned[token]) == pytest.approx(-float(g.adjacency[g.logit_start + j, node]),
                                                       abs=tolerance(change))


def test_logit_targets_take_the_most_probable_until_95_percent():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.1, 0.06, 0.04]))
    ids, probs = logit_targets(logits, max_logits=10, mass=0.95)
    assert ids.tolist() == [0, 1, 2, 3] and probs.sum() == pytest.approx(0.96)
    assert logit_targets(logits, max_logits=2)[0].tolist() == [0, 1]


def test_pruning_keeps_tokens_and_logits_and_only_connected_features(small_graph):
    g = small_graph
    pruned = prune_graph(g, 0.8, 0.98)
    assert pruned.node_mask[g.token_start:].all()
    kept = pruned.node_mask[:g.n_features]
    assert kept.sum() < g.n_features
    edges = pruned.edge_mask
    for node in kept.nonzero().flatten().tolist():
        assert edges[node].any() and edges[:, node].any()
    assert not edges[~pruned.node_mask].any() and not edges[:, ~pruned.node_mask].any()
    everything = prune_graph(g, 1.0, 1.0)
    assert everything.node_mask.sum() >= pruned.node_mask.sum()
    with pytest.raises(ValueError, match="between 0 and 1"):
        prune_graph(g, 1.5)


def test_influence_is_the_sum_over_paths_and_the_scores_are_shares(small_graph):
    g = small_graph
    share, weights = shares(g.adjacency), logit_weights(g)
    total = torch.linalg.solve(torch.eye(g.n_nodes) - share.T, share.T @ weights)  # w Â (I - Â)^-1
    assert torch.allclose(influence(share, weights), total, atol=1e-5)
    replacement, completeness = graph_scores(g)
    assert 0 <= replacement <= 1 and 0 <= completeness <= 1


def test_the_graph_json_is_circuit_tracers_shape(small, small_graph):
    g = small_graph
    pruned = prune_graph(g)
    data = circuit_tracer_json(g, pruned, str, "small", "test", 0.8, pinned=["E_0_0"], supernodes=[["a", "E_0_0"]])
    ids = [node["node_id"] for node in data["nodes"]]
    assert len(ids) == len(set(ids))
    assert {link["source"] for link in data["links"]} | {link["target"] for link in data["links"]} <= set(ids)
    assert sum(node["feature_type"] == "embedding" for node in data["nodes"]) == g.n_pos
    logits = [node for node in data["nodes"] if node["feature_type"] == "logit"]
    assert [node["is_target_logit"] for node in logits] == [True] + [False] * (len(logits) - 1)
    assert data["qParams"]["supernodes"] == [["a", "E_0_0"]] and data["metadata"]["schema_version"] == 1
    json.dumps(data)


def test_qk_parts_sum_to_the_heads_score(small):
    model, transcoders, tokens = small
    split = qk_attribution(model, transcoders, tokens, layer=1, head=2, query=7, key=3)
    assert float(split.matrix.sum()) == pytest.approx(split.score, abs=tolerance(split.matrix))
    assert split.query_parts[-1] == "bias" and any("feature" in p for p in split.key_parts)
    assert len(split.top_pairs(5)) == 5
    with pytest.raises(ValueError, match="key <= query"):
        qk_attribution(model, transcoders, tokens, layer=1, head=0, query=2, key=3)


def test_models_a_graph_cannot_be_built_for_are_refused():
    torch.manual_seed(0)
    post = GPT(GPTConfig(vocab_size=8, block_size=8, d_model=8, n_heads=2, n_layers=1, d_mlp=16,
                         norm_placement="post")).eval()
    with pytest.raises(ReplacementError, match="pre-norm"):
        cached_pass(post, torch.tensor([0, 1, 2]))


def test_a_transcoder_set_round_trips_and_bad_sets_get_a_sentence(small, tmp_path):
    _, transcoders, _ = small
    save_transcoders(transcoders, tmp_path / "set", scan="test", extra={"note": 1})
    loaded, config = load_transcoders(tmp_path / "set")
    assert config["activation"] == "topk" and config["k"] == 6 and config["feature_input_hook"] == "mlp.hook_in"
    for a, b in zip(transcoders, loaded):
        for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
            assert torch.equal(p, q), name
    tensors = load_file(str(tmp_path / "set/layer_0.safetensors"))
    assert tensors["W_enc"].shape == (48, 24) and tensors["W_dec"].shape == (48, 24)
    save_file({**tensors, "activation_function.threshold": torch.zeros(48)}, str(tmp_path / "set/layer_1.safetensors"))
    with pytest.raises(TranscoderFileError, match="JumpReLU"):
        load_transcoders(tmp_path / "set")
    (tmp_path / "set/config.yaml").write_text(yaml.safe_dump({"model_kind": "cross_layer_transcoder"}))
    with pytest.raises(TranscoderFileError, match="per-layer"):
        load_transcoders(tmp_path / "set")
    with pytest.raises(TranscoderFileError, match="no config.yaml"):
        load_transcoders(tmp_path)


def test_training_a_transcoder_learns_the_ffn(small):
    model, _, _ = small
    torch.manual_seed(1)
    ids = torch.randint(0, 20, (4096,))
    pairs = collect_pairs(model, ids, 2048, window=16)
    assert pairs[1].shape == (2048, 48)
    tc = Transcoder(TranscoderConfig(24, 96, 8, 1, skip=True))
    trainer = TranscoderTrainer(tc, pairs[1], SAETrainConfig(batch_size=256, epochs=8))
    trainer.run()
    first, last = trainer.history[0]["explained_variance"], trainer.history[-1]["explained_variance"]
    assert last > max(first, 0.5)
    x, y = pairs[1][:512].split(24, dim=-1)
    with torch.no_grad():
        explained = 1 - (tc(x) - y).pow(2).sum() / (y - y.mean(0)).pow(2).sum()
    assert float(explained) > 0.5  # the folded-back scales read and write raw activations


@pytest.mark.slow
def test_the_shipped_transcoders_on_the_shakespeare_model():
    from model_core.checkpoints.checkpoint import load_checkpoint
    ckpt = load_checkpoint(ROOT / "explorer/assets/models/shakespeare")
    transcoders, config = load_transcoders(SHIPPED)
    evaluation = config["transformer_explorer"]["evaluation"]
    assert evaluation["loss_gap"] <= 0.15
    tokens = ckpt.tokenizer.encode("\nROMEO:\nWhat say you, my lord? I will not")
    g = attribution_graph(ckpt.model.eval(), transcoders, tokens)
    pruned = prune_graph(g)
    assert pruned.node_mask.sum() <= 200 + g.n_pos + len(g.logit_tokens)
    replacement, completeness = graph_scores(g)
    assert 0.3 < completeness <= 1 and 0 < replacement <= 1


def test_a_transcoder_run_trains_every_layer_in_the_child_protocol(small):
    """TranscoderRun as the training child runs it (without the process): its steps run on across the layers, its
    results hold the evaluation and each layer's feature statistics, and a stop while training ends it."""
    from model_core.features.transcoder_run import TranscoderRun, TranscoderRunConfig, transcoder_job
    model, _, _ = small
    ids = torch.randint(0, 20, (6000,), generator=torch.Generator().manual_seed(2))
    cfg = TranscoderRunConfig(2, 32, 4, tokens=1024, window=16, eval_tokens=512, stats_tokens=256,
                              train=SAETrainConfig(batch_size=256, epochs=2))
    job = transcoder_job(model, ids[:5000], ids[5000:], cfg, "small", "random")
    run = job.payload["build"](job.payload)
    assert isinstance(run, TranscoderRun)
    reports = []
    assert run.run(reports.append) == "finished"
    steps = [r["step"] for r in reports if "layer" in r]
    assert steps == sorted(steps) and steps[-1] == cfg.max_steps == 16
    assert {r["layer"] for r in reports if "layer" in r} == {0, 1}
    final = reports[-1]["outputs"]
    assert len(final["evaluation"]["explained_variance"]) == 2 and len(final["feature_stats"]) == 2
    stopping = job.payload["build"](job.payload)
    stopping.stop()
    assert stopping.run(lambda m: None) == "stopped"
