"""Training an SAE in the launched app through gradio_client: /train_features trains one on the classroom model in
a training slot and /train_features_status returns its evaluation; pause and stop; the slots hold; the download
opens as an SAE; SIGINT (Ctrl-C) ends the app and the SAE's training child."""
import json
import signal
import time

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from model_core.features.saelens_format import load_sae
from tests.helpers import alive, app_process, descendants, wait_for

pytestmark = pytest.mark.slow

HOOK = "blocks.2.hook_resid_post"


def status_until(c: Client, test, timeout=300.0) -> tuple[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        status, evaluation = c.predict(api_name="/train_features_status")
        if test(status, evaluation):
            return status, evaluation
        assert time.monotonic() < deadline, status
        time.sleep(1.0)


def test_train_features_trains_a_small_sae_and_returns_its_evaluation(app_url):
    c = Client(app_url, verbose=False)
    started = c.predict(hook=HOOK, features=256, k=32, tokens=65_536, api_name="/train_features")
    assert "256 features" in started and "65,536 tokens" in started
    status, evaluation = status_until(c, lambda s, e: bool(e))
    ev = json.loads(evaluation)
    assert ev["state"] == "finished" and ev["n_tokens"] > 0
    assert 0.5 < ev["explained_variance"] <= 1 and 0.5 < ev["ce_loss_recovered"] <= 1.05
    assert ev["l0"] == pytest.approx(32, abs=1e-6) and 0 <= ev["dead_fraction"] <= 1
    assert "finished" in status
    listing, _, note = c.predict(prompt="First Citizen:", api_name="/features")
    assert "trained here" in note and len(listing["data"]) > 0
    sae = load_sae(c.predict(api_name="/download_sae"))
    assert (sae.cfg.d_sae, sae.cfg.k, sae.cfg.hook_name) == (256, 32, HOOK)


def test_pause_resume_and_stop_reach_the_run_and_the_slots_hold(app_url):
    a, b, c = (Client(app_url, verbose=False) for _ in range(3))
    for user in (a, b):  # the app runs with --max-trainers 2
        user.predict(hook=HOOK, features=1024, k=32, tokens=524_288, api_name="/train_features")
    with pytest.raises(AppError, match="training slots of this server are in use"):
        c.predict(hook=HOOK, features=256, k=32, tokens=65_536, api_name="/train_features")
    a.predict(api_name="/train_features_pause")
    status_until(a, lambda s, e: s.startswith("**paused**"), timeout=120)
    a.predict(api_name="/train_features_resume")
    status_until(a, lambda s, e: s.startswith("**running**"), timeout=120)
    for user in (a, b):
        user.predict(api_name="/train_features_stop")
    for user in (a, b):
        status, evaluation = status_until(user, lambda s, e: not s.startswith(("**running**", "**paused**")),
                                          timeout=120)
        assert status.startswith("**stopped**")
    with pytest.raises(AppError, match="No SAE is training"):
        a.predict(api_name="/train_features_stop")


@pytest.mark.app  # launches an app of its own
def test_sigint_ends_an_sae_training_child_with_the_app(tmp_path):
    """SIGINT, a terminal's Ctrl-C (SIGTERM with a model's training child: tests/test_lifecycle.py)."""
    with app_process(tmp_path / "app.log") as (app, url):
        Client(url, verbose=False).predict(hook=HOOK, features=1024, k=32, tokens=524_288, api_name="/train_features")
        wait_for(lambda: len(descendants(app.pid)) >= 3, "a forkserver and a training child", timeout=60)
        below = descendants(app.pid)
        app.send_signal(signal.SIGINT)
        wait_for(lambda: app.poll() is not None and not any(alive(p) for p in below),
                 lambda: f"every process to end after SIGINT (alive: {[p for p in below if alive(p)]})", timeout=10.0)
        assert app.wait(timeout=5) == 0, (tmp_path / "app.log").read_text()[-2000:]
        assert "training processes ended" in (tmp_path / "app.log").read_text()
