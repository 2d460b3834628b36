"""Training transcoders in the launched app through gradio_client (the Graph tab's "Train transcoders on this model"):
a model with none is refused a graph in a sentence that says how to get some; /train_transcoders trains a set in a
training slot, /train_transcoders_status returns its evaluation, the graph then reads it, and the download opens as
circuit-tracer's transcoder set."""
import json
import time
import zipfile

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from model_core.features.transcoder_format import load_transcoders

pytestmark = pytest.mark.slow


def status_until(c: Client, test, timeout=300.0) -> tuple[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        status, evaluation = c.predict(api_name="/train_transcoders_status")
        if test(status, evaluation):
            return status, evaluation
        assert time.monotonic() < deadline, status
        time.sleep(1.0)


def test_a_model_without_transcoders_trains_a_set_and_its_graph_reads_it(app_url, tmp_path):
    c = Client(app_url, verbose=False)
    c.predict(name="first-names", api_name="/use_shipped_model")
    with pytest.raises(AppError, match="has no transcoders.*Train transcoders on this model"):
        c.predict(prompt="emma", node_threshold=0.8, api_name="/attribution_graph")
    started = c.predict(features=128, k=8, tokens=16_384, api_name="/train_transcoders")
    assert "128 features" in started and "16,384 tokens" in started
    status, evaluation = status_until(c, lambda s, e: bool(e))
    ev = json.loads(evaluation)
    assert ev["state"] == "finished" and len(ev["explained_variance"]) >= 1
    assert all(0 < v <= 1 for v in ev["explained_variance"]) and ev["ce_loss_replaced"] > 0
    _, scores, _ = c.predict(prompt="emma", node_threshold=0.8, api_name="/attribution_graph")
    assert "Replacement score" in scores
    with zipfile.ZipFile(c.predict(api_name="/download_transcoders")) as z:
        z.extractall(tmp_path / "set")
    transcoders, config = load_transcoders(tmp_path / "set")
    assert [tc.cfg.d_transcoder for tc in transcoders] == [128] * len(transcoders) and config["k"] == 8
    with pytest.raises(AppError, match="No transcoders are training"):
        c.predict(api_name="/train_transcoders_stop")
