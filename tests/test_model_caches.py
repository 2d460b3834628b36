"""One cache policy: everything computed from the inspected model lives in its ModelCaches, kept while the model
stays and forgotten, all of it, when the session inspects another model."""
import zipfile
from dataclasses import fields

import pytest

from explorer.callbacks import features_source
from explorer.callbacks import heads as H
from explorer.callbacks.common import analyse
from explorer.callbacks.experiments import evaluation_set, importance_view
from explorer.callbacks.features_source import current_sae, load_sae_upload
from explorer.callbacks.graph_source import Transcoders
from explorer.common.errors import UserError
from explorer.state.inspected import ModelCaches
from model_core.features.sae import SAEConfig, SparseAutoencoder
from model_core.features.saelens_format import sae_files
from tests.helpers import data_session

pytestmark = pytest.mark.slow


def test_changing_the_inspected_model_forgets_every_cache_of_the_old_one(tmp_path, monkeypatch):
    session = data_session()
    sae = SparseAutoencoder(SAEConfig(16, 8, "topk", 2, "blocks.1.hook_resid_post"))
    monkeypatch.setattr(features_source, "shipped_sae", lambda name: (sae, None))  # shipped without statistics
    session.inspected.shared_key = "shipped:tiny"
    assert current_sae(session).stats is session.inspected.caches.shipped_sae_stats is not None
    session.inspected.shared_key = None  # the Heads tab keeps a shipped model's results server-wide, not here
    analysis, report = analyse(session, "First Citizen"), H.report_of(session)
    assert analyse(session, "First Citizen") is analysis and H.report_of(session) is report
    importance_view(session, "mean")  # the evaluation set, its mean activations and the map
    evaluation = evaluation_set(session)
    assert evaluation_set(session) is evaluation and evaluation.means is not None and "mean" in evaluation.maps
    path = tmp_path / "sae.zip"
    with zipfile.ZipFile(path, "w") as z:
        for file, data in sae_files(sae).items():
            z.writestr(f"sae/{file}", data)
    load_sae_upload(session, str(path))
    assert current_sae(session).source == "uploaded: sae.zip" and current_sae(session).stats is not None
    session.inspected.caches.transcoders = Transcoders([], [], "trained:test")  # as the Graph tab's training adopts
    caches, empty = session.inspected.caches, ModelCaches()
    # a cache added later must be filled here too
    assert all(getattr(caches, f.name) != getattr(empty, f.name) for f in fields(ModelCaches))

    session.inspected.use(session.inspected.checkpoint, "another model")
    assert session.inspected.caches == ModelCaches()
    assert analyse(session, "First Citizen") is not analysis and H.report_of(session) is not report
    assert evaluation_set(session) is not evaluation
    with pytest.raises(UserError, match="There is no SAE"):
        current_sae(session)
