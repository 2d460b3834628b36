"""The Features tab's callbacks on the shipped Shakespeare model and its shipped SAE, and an uploaded SAE: the
listing is ordered as asked, one feature's views agree with the SAE, steering at strength 0 changes nothing, and
bad input gets a sentence."""
import dataclasses
import zipfile

import numpy as np
import pytest
import torch

from explorer.callbacks import features as F
from explorer.callbacks.features_source import current_sae, load_sae_upload
from explorer.common.errors import UserError
from explorer.state.inspected import SAEChoice
from explorer.state.session import new_session
from explorer.state.shipped_features import shipped_sae_names
from model_core.features.readout import prompt_activations
from model_core.features.sae import SAEConfig, SparseAutoencoder
from model_core.features.saelens_format import sae_files

PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak."
pytestmark = pytest.mark.skipif("shakespeare" not in shipped_sae_names(), reason="no SAE shipped for shakespeare")


@pytest.fixture(scope="module")
def session():
    return new_session("shakespeare")


@pytest.mark.slow
def test_listing_by_activation_is_the_active_features_at_the_token_strongest_first(session):
    rows, density_fig, caption = F.features_list(session, PROMPT, F.ORDERS[0], 5)
    ids = session.inspected.tokenizer.encode(PROMPT)
    acts = prompt_activations(session.inspected.model, current_sae(session).sae, ids)[5]
    assert [r[0] for r in rows] == [int(f) for f in torch.argsort(-acts, stable=True)[:len(rows)]]
    assert len(rows) == int((acts > 0).sum()) and all(r[1] > 0 for r in rows)
    assert "5:" in caption and f"feature {rows[0][0]}" in caption
    assert density_fig.to_plotly_json()["data"][0]["type"] == "bar"


@pytest.mark.slow
def test_listing_by_density_is_densest_first(session):
    rows, _, caption = F.features_list(session, PROMPT, "density", -1)
    densities = [float(r[2].rstrip("%")) for r in rows]
    assert densities == sorted(densities, reverse=True) and len(rows) == F.LISTED
    assert "densest first" in caption


def test_one_feature_view_matches_the_sae(session):
    choice = current_sae(session)
    f = int(np.argmax(choice.stats.density))
    prompt_html, examples, hist, logits, neurons, caption = F.feature_view(session, PROMPT, f)
    assert f"Feature {f}" in caption and "fires on" in caption
    assert examples.count("<tr>") == 1 + int((choice.stats.top_values[f] > 0).sum())
    assert int(np.sum(hist.to_plotly_json()["data"][0]["y"])) == int(choice.stats.hist_counts[f].sum()) > 0
    assert len(logits.to_plotly_json()["data"][0]["y"]) == 2 * F.LOGIT_TOKENS
    assert neurons and neurons[0][0].startswith(f"{choice.stats.neuron_layer}.")
    assert "<span" in prompt_html


@pytest.mark.slow
def test_steering_at_zero_strength_gives_the_same_text_twice(session):
    html, caption = F.steer_view(session, "ROMEO:", -1, 0.0, 20, 0.8, 3)
    plain, steered = [part.split("</pre>")[0] for part in html.split("<pre class='te-gen'>")[1:]]
    assert plain == steered and "The text is the same" in caption


@pytest.mark.parametrize("call, message", [
    (lambda s: F.feature_view(s, PROMPT, 10**6), "Feature must be"),
    (lambda s: F.feature_view(s, PROMPT, "x"), "Feature"),
    (lambda s: F.steer_view(s, PROMPT, 0, 1e9), "Strength"),
    (lambda s: F.features_list(s, PROMPT, "loudness"), "List features by"),
    (lambda s: F.features_list(s, "", F.ORDERS[0]), "Type a prompt"),
])
def test_bad_input_gets_a_sentence(session, call, message):
    with pytest.raises(UserError, match=message):
        call(session)


def zipped(tmp_path, sae, name="sae.zip"):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as z:
        for file, data in sae_files(sae).items():
            z.writestr(f"sae/{file}", data)
    return str(path)


@pytest.mark.slow
def test_an_uploaded_sae_replaces_the_shipped_one_until_the_model_changes(tmp_path):
    session = new_session("shakespeare")
    torch.manual_seed(0)
    sae = SparseAutoencoder(SAEConfig(128, 64, "topk", 4, "blocks.1.hook_resid_post"))
    assert "Loaded **sae.zip**" in load_sae_upload(session, zipped(tmp_path, sae))
    choice = current_sae(session)
    assert choice.source == "uploaded: sae.zip" and choice.sae.n_features == 64
    assert choice.stats.density.shape == (64,) and choice.stats.n_tokens > 10_000
    rows, _, _ = F.features_list(session, PROMPT, "density")
    assert all(0 <= r[0] < 64 for r in rows)
    session.inspected.use_shipped("shakespeare")  # another model (version): the upload no longer applies
    assert current_sae(session).source == "shipped with the app"


def test_uploads_that_do_not_fit_are_refused_with_a_sentence(tmp_path):
    session = new_session("shakespeare")
    wrong_width = SparseAutoencoder(SAEConfig(64, 32, "topk", 4, "blocks.1.hook_resid_post"))
    with pytest.raises(UserError, match="64-wide activations"):
        load_sae_upload(session, zipped(tmp_path, wrong_width))
    wrong_hook = SparseAutoencoder(SAEConfig(128, 32, "topk", 4, "blocks.9.hook_resid_post"))
    with pytest.raises(UserError, match="not a hook point"):
        load_sae_upload(session, zipped(tmp_path, wrong_hook, "hook.zip"))
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip at all")
    with pytest.raises(UserError, match="neither an SAE folder nor a .zip"):
        load_sae_upload(session, str(junk))
    assert "junk.zip" not in str(current_sae(session).source)


def test_a_model_without_an_sae_says_how_to_get_one():
    session = new_session("first-names")
    with pytest.raises(UserError, match="There is no SAE for the inspected model"):
        F.features_list(session, "anna", F.ORDERS[0])


@pytest.mark.slow
def test_feature_minus_one_is_the_strongest_at_the_chosen_token(session):
    ids = session.inspected.tokenizer.encode(PROMPT)
    acts = prompt_activations(session.inspected.model, current_sae(session).sae, ids)
    caption = F.feature_view(session, PROMPT, -1, 3)[-1]
    assert f"Feature {int(acts[3].argmax())} fires on" in caption


def test_a_dead_feature_cannot_steer(session):
    shipped = current_sae(session)  # it has no dead feature: statistics in which feature 7 never fired
    stats = dataclasses.replace(shipped.stats, top_values=shipped.stats.top_values.copy(),
                                density=shipped.stats.density.copy())
    stats.top_values[7], stats.density[7] = 0, 0
    session.inspected.caches.sae = SAEChoice(shipped.sae, stats, "shipped, one feature silenced")
    try:
        with pytest.raises(UserError, match="never fires"):
            F.steer_view(session, PROMPT, 7, 2.0)
    finally:
        session.inspected.caches.sae = None
