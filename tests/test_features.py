"""Sparse autoencoders (model_core.features): they recover the true directions of a feature-sparse signal, keep
unit decoder rows and exactly k active features, round-trip SAELens's format exactly, and CE loss recovered is 0
for the zero-ablated site and 1 for a perfect reconstruction."""
import functools
import json

import pytest
import torch

from model_core.features.activations import HookError, activations_at, check_hook, collect_activations, sae_hook_names
from model_core.features.evaluation import evaluate_sae
from model_core.features.readout import steered_generation
from model_core.features.sae import SAEConfig, SAEConfigError, SparseAutoencoder
from model_core.features.saelens_format import CFG, WEIGHTS, SAEFileError, load_sae, sae_files, save_sae
from model_core.features.training import SAETrainConfig, SAETrainer
from model_core.model.sampling import SamplingSettings, generate
from tests.helpers import tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def sparse_signal(n: int, d: int = 24, n_true: int = 48, k_true: int = 3, seed: int = 0):
    """n samples [n, d], each the sum of k_true of n_true random unit directions with magnitudes in 1..2."""
    gen = torch.Generator().manual_seed(seed)
    true = torch.randn(n_true, d, generator=gen)
    true = true / true.norm(dim=-1, keepdim=True)
    which = torch.rand(n, n_true, generator=gen).argsort(dim=-1)[:, :k_true]  # k_true distinct features per sample
    coef = torch.zeros(n, n_true).scatter(1, which, 1.0 + torch.rand(n, k_true, generator=gen))
    return coef @ true, true


def trained_on_signal(k: int = 3, steps_tokens: int = 20_000, seed: int = 0):
    x, true = sparse_signal(steps_tokens, seed=seed)
    torch.manual_seed(seed)
    sae = SparseAutoencoder(SAEConfig(x.shape[1], 96, "topk", k, "blocks.0.hook_resid_post"))
    trainer = SAETrainer(sae, x, SAETrainConfig(lr=1e-2, batch_size=256, epochs=3, seed=seed, dead_tokens=5_000))
    trainer.run()
    return sae, trainer, x, true


@functools.cache
def signal_sae_once():
    return trained_on_signal()


@pytest.fixture
def signal_sae(one_thread):
    """Trained once, on one thread (two wait on each other on a busy machine: ten times slower)."""
    return signal_sae_once()


@pytest.mark.slow
def test_a_sparse_signal_is_decomposed_into_its_true_directions(signal_sae):
    sae, _, x, true = signal_sae
    cosine = true @ sae.W_dec.detach().T  # [n_true, d_sae]: both unit rows
    recovered = cosine.max(dim=1).values
    assert (recovered > 0.95).float().mean() >= 0.9, recovered
    with torch.no_grad():
        error = (sae(x) - x).pow(2).sum() / (x - x.mean(0)).pow(2).sum()
    assert error < 0.1


@pytest.mark.slow
def test_decoder_rows_stay_unit_norm_and_topk_keeps_k_features(signal_sae):
    sae, trainer, x, _ = signal_sae
    assert trainer.step_count == trainer.total_steps > 200
    torch.testing.assert_close(sae.W_dec.detach().norm(dim=-1), torch.ones(sae.cfg.d_sae), rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        active = (sae.encode(x[:2000]) > 0).sum(-1)
    assert active.max() <= 3 and active.float().mean() > 2.9  # exactly k wherever the top k are positive


def test_the_dead_window_is_320_mean_gaps_between_firings_unless_given():
    x, _ = sparse_signal(2_000)
    sae = SparseAutoencoder(SAEConfig(x.shape[1], 64, "topk", 4))
    assert SAETrainer(sae, x, SAETrainConfig(batch_size=128)).dead_tokens == 320 * 64 // 4
    assert SAETrainer(sae, x, SAETrainConfig(batch_size=128, dead_tokens=300)).dead_tokens == 300


def test_auxk_trains_only_the_dead_features():
    x, _ = sparse_signal(2_000)
    torch.manual_seed(0)
    sae = SparseAutoencoder(SAEConfig(x.shape[1], 64, "topk", 4))
    trainer = SAETrainer(sae, x, SAETrainConfig(batch_size=256))
    dead = torch.zeros(64, dtype=torch.bool)
    dead[[3, 10, 40]] = True
    batch = trainer.next_batch()
    trainer.aux_loss(torch.randn_like(batch), sae.pre_activations(batch), dead).backward()
    touched = (sae.W_dec.grad.abs().sum(-1) > 0) | (sae.W_enc.grad.abs().sum(0) > 0)  # [d_sae]
    assert touched.any() and not (touched & ~dead).any()


def test_training_reports_metrics_and_obeys_stop():
    x, _ = sparse_signal(8_000)
    sae = SparseAutoencoder(SAEConfig(x.shape[1], 32, "topk", 2))
    trainer = SAETrainer(sae, x, SAETrainConfig(batch_size=128, epochs=5))
    seen = []

    def callback(metrics):
        seen.append(metrics)
        if len(seen) == 3:
            trainer.stop()
    assert trainer.run(callback, report_every=2) == "stopped"
    assert [m["step"] for m in seen] == [2, 4, 6]
    assert {"loss", "l0", "dead_fraction", "explained_variance"} <= seen[0].keys()
    assert trainer.step_count == 6 < trainer.total_steps


@pytest.mark.slow
def test_relu_l1_sae_is_sparser_with_a_larger_coefficient():
    x, _ = sparse_signal(10_000)
    l0 = []
    for l1 in (0.5, 10.0):
        torch.manual_seed(0)
        sae = SparseAutoencoder(SAEConfig(x.shape[1], 64, "standard"))
        SAETrainer(sae, x, SAETrainConfig(lr=5e-3, batch_size=256, epochs=2, l1_coefficient=l1)).run()
        with torch.no_grad():
            l0.append(float((sae.encode(x) > 0).sum(-1).float().mean()))
    assert l0[1] < l0[0]


def random_sae(d_in=8, d_sae=20, architecture="topk", k=4, hook="blocks.1.hook_resid_post", seed=0):
    torch.manual_seed(seed)
    sae = SparseAutoencoder(SAEConfig(d_in, d_sae, architecture, k, hook, "tiny", extra={"note": "test"}))
    with torch.no_grad():
        for p in sae.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return sae


@pytest.mark.parametrize("architecture", ["topk", "standard"])
def test_saelens_format_round_trip_is_exact(tmp_path, architecture):
    sae = random_sae(architecture=architecture)
    folder = save_sae(sae, tmp_path / "sae")
    back = load_sae(folder)
    for name, p in sae.named_parameters():
        assert torch.equal(p, getattr(back, name)), name
    assert (back.cfg.d_in, back.cfg.d_sae, back.cfg.architecture, back.cfg.hook_name, back.cfg.extra["note"]) == \
        (8, 20, architecture, "blocks.1.hook_resid_post", "test")
    assert sae_files(back) == sae_files(sae)  # the same bytes again
    cfg = json.loads((folder / CFG).read_text())
    assert cfg["metadata"]["hook_name"] == "blocks.1.hook_resid_post" and cfg["architecture"] == architecture


def test_a_zip_of_the_folder_loads_the_same(tmp_path):
    import zipfile
    sae = random_sae()
    files = sae_files(sae)
    with zipfile.ZipFile(tmp_path / "sae.zip", "w") as z:
        for name, data in files.items():
            z.writestr(f"my_sae/{name}", data)
    back = load_sae(tmp_path / "sae.zip")
    assert all(torch.equal(p, getattr(back, n)) for n, p in sae.named_parameters())
    assert torch.equal(load_sae((tmp_path / "sae.zip").read_bytes()).W_dec, sae.W_dec)


def test_saelens_opens_ours_and_we_open_saelens(tmp_path):
    sae_lens = pytest.importorskip("sae_lens", reason="sae-lens (a benchmark dependency) is not installed")
    ours = random_sae(architecture="topk")
    save_sae(ours, tmp_path / "ours")
    theirs = sae_lens.SAE.load_from_disk(str(tmp_path / "ours"))
    x = torch.randn(16, 8)
    assert theirs.cfg.metadata.hook_name == "blocks.1.hook_resid_post"
    torch.testing.assert_close(theirs(x), ours(x), rtol=0, atol=0)
    theirs.save_model(str(tmp_path / "theirs"))
    back = load_sae(tmp_path / "theirs")
    torch.testing.assert_close(back(x), ours(x), rtol=0, atol=0)


def test_a_topk_sae_that_ranks_by_decoder_norm_is_folded_to_the_same_function(tmp_path):
    """SAELens's rescale_acts_by_decoder_norm files: we fold the norms in, same outputs, unit decoder rows."""
    sae = random_sae()
    with torch.no_grad():
        sae.W_dec.mul_(torch.linspace(0.5, 2.0, 20)[:, None])
    files = sae_files(sae)
    cfg = json.loads(files[CFG])
    cfg["rescale_acts_by_decoder_norm"] = True
    (tmp_path / CFG).write_text(json.dumps(cfg))
    (tmp_path / WEIGHTS).write_bytes(files[WEIGHTS])
    back = load_sae(tmp_path)
    x = torch.randn(32, 8)
    norms = sae.W_dec.norm(dim=-1)
    expected_pre = ((x - sae.b_dec) @ sae.W_enc + sae.b_enc) * norms
    top = expected_pre.topk(4, dim=-1)
    acts = torch.zeros_like(expected_pre).scatter(-1, top.indices, top.values.relu())
    torch.testing.assert_close(back(x), (acts / norms) @ sae.W_dec + sae.b_dec, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(back.W_dec.norm(dim=-1), torch.ones(20), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("damage, message", [
    (lambda f: {CFG: f[CFG]}, "no sae_weights.safetensors"),
    (lambda f: {**f, WEIGHTS: f[WEIGHTS][:-10]}, "damaged or truncated"),
    (lambda f: {**f, CFG: f[CFG].replace(b'"d_sae": 20', b'"d_sae": 21')}, "shape"),
    (lambda f: {**f, CFG: f[CFG].replace(b'"topk"', b'"jumprelu"')}, "TopK and standard"),
    (lambda f: {**f, CFG: f[CFG].replace(b'"d_in": 8', b'"d_in": 80000')}, "d_in must be"),
    (lambda f: {**f, CFG: f[CFG].replace(b'"k": 4', b'"k": 0')}, "k must be"),
    (lambda f: {**f, CFG: b"{not json"}, "not valid JSON"),
])
def test_damaged_files_are_refused_with_a_sentence(tmp_path, damage, message):
    for name, data in damage(sae_files(random_sae())).items():
        (tmp_path / name).write_bytes(data)
    with pytest.raises(SAEFileError, match=message):
        load_sae(tmp_path)


def test_bad_settings_and_hooks_are_refused_with_a_sentence():
    with pytest.raises(SAEConfigError, match="k must be"):
        SAEConfig(8, 4, "topk", k=5).validate()
    with pytest.raises(SAEConfigError, match="architecture"):
        SAEConfig(8, 4, "gated").validate()
    model = tiny_model()
    with pytest.raises(HookError, match="blocks.L.hook_resid_pre"):
        check_hook(model.cfg, "blocks.0.attn.hook_pattern")
    assert check_hook(model.cfg, "blocks.1.mlp.hook_post") == model.cfg.d_mlp
    assert "blocks.1.hook_resid_post" in sae_hook_names(model.cfg)


def test_collected_activations_are_those_of_a_full_forward_pass():
    model = tiny_model()
    ids = torch.randint(0, model.cfg.vocab_size, (200,), generator=torch.Generator().manual_seed(0))
    acts = collect_activations(model, ids, "blocks.0.hook_resid_post", 64, window=8, batch_tokens=32)
    assert acts.shape == (64, model.cfg.d_model)
    _, cache = model.run_with_cache(ids.view(25, 8), names_filter="blocks.0.hook_resid_post")
    every = cache["blocks.0.hook_resid_post"].reshape(-1, model.cfg.d_model)
    assert all(((every - row).abs().max(dim=1).values < 1e-5).any() for row in acts)  # each row is a real one


def identity_sae(d: int, hook: str) -> SparseAutoencoder:
    """relu(x) - relu(-x) = x: a ReLU SAE with 2d features that reconstructs perfectly."""
    sae = SparseAutoencoder(SAEConfig(d, 2 * d, "standard", hook_name=hook))
    eye = torch.eye(d)
    with torch.no_grad():
        sae.W_enc.copy_(torch.cat([eye, -eye], dim=1))
        sae.W_dec.copy_(torch.cat([eye, -eye], dim=0))
        sae.b_enc.zero_()
        sae.b_dec.zero_()
    return sae


def test_ce_loss_recovered_is_1_for_a_perfect_reconstruction_and_0_for_zeros():
    model, hook = tiny_model(n_layers=2), "blocks.0.hook_resid_post"
    ids = torch.randint(0, model.cfg.vocab_size, (400,), generator=torch.Generator().manual_seed(0))
    perfect = evaluate_sae(model, identity_sae(model.cfg.d_model, hook), ids, n_tokens=256)
    assert perfect.ce_loss_recovered == pytest.approx(1.0, abs=1e-5)
    assert perfect.explained_variance == pytest.approx(1.0, abs=1e-6)
    assert perfect.ce_loss_with_sae == pytest.approx(perfect.ce_loss_clean, rel=1e-5)
    zeros = SparseAutoencoder(SAEConfig(model.cfg.d_model, 16, "topk", 2, hook))
    with torch.no_grad():
        for p in zeros.parameters():
            p.zero_()
    ablated = evaluate_sae(model, zeros, ids, n_tokens=256)
    assert ablated.ce_loss_recovered == pytest.approx(0.0, abs=1e-6)
    assert ablated.dead_fraction == 1.0 and ablated.l0 == 0.0


def test_steering_with_zero_strength_is_the_plain_generation_and_leaves_no_hook():
    model = tiny_model()
    sae = random_sae(d_in=model.cfg.d_model, hook="blocks.0.hook_resid_post")
    knobs = SamplingSettings(0.9)
    plain = [s.token for s in generate(model, [1, 2, 3], 12, 0.9, seed=5)]
    assert [s.token for s in steered_generation(model, [1, 2, 3], sae, 3, 0.0, 12, knobs, 5)] == plain
    pushed = [s.token for s in steered_generation(model, [1, 2, 3], sae, 3, 50.0, 12, knobs, 5)]
    assert pushed != plain
    assert not any(h.has_hooks() for h in model.hook_dict.values())


def test_activations_at_stops_at_the_hook_and_equals_the_cache():
    model = tiny_model()
    idx = torch.randint(0, model.cfg.vocab_size, (2, 8), generator=torch.Generator().manual_seed(3))
    _, cache = model.run_with_cache(idx)
    torch.testing.assert_close(activations_at(model, idx, "blocks.1.mlp.hook_post"), cache["blocks.1.mlp.hook_post"])
    assert not any(h.has_hooks() for h in model.hook_dict.values())


@pytest.mark.parametrize("hook", ["blocks.0.hook_resid_post", "blocks.1.hook_resid_pre", "blocks.1.hook_resid_post",
                                  "blocks.0.hook_mlp_out"])
def test_evaluation_splices_the_reconstruction_as_a_whole_pass_would(hook):
    """Between blocks the edited passes resume from the clean stream: the same losses as whole hooked passes."""
    from model_core.analysis.ablation import eval_windows
    from model_core.features.evaluation import ce_per_token

    model = tiny_model(n_layers=2)
    sae = random_sae(d_in=model.cfg.d_model, hook=hook)
    ids = torch.randint(0, model.cfg.vocab_size, (300,), generator=torch.Generator().manual_seed(1))
    result = evaluate_sae(model, sae, ids, n_tokens=64, window=8)
    windows = eval_windows(ids, 8, 8, 0)
    x, y = windows[:, :-1], windows[:, 1:]
    with torch.no_grad():
        spliced = model.run_with_hooks(x, fwd_hooks=[(hook, lambda a, _h: sae(a))])[0]
        zeroed = model.run_with_hooks(x, fwd_hooks=[(hook, lambda a, _h: torch.zeros_like(a))])[0]
    assert result.ce_loss_with_sae == pytest.approx(float(ce_per_token(spliced, y)) / 64, rel=1e-5)
    assert result.ce_loss_zero_ablated == pytest.approx(float(ce_per_token(zeroed, y)) / 64, rel=1e-5)
