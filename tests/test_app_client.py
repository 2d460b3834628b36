"""The launched app through gradio_client: analysis endpoints, readable errors, training, two users at once."""
import base64
import json
import re
import zipfile

import numpy as np
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from explorer.common.controls import ARCH_FIELDS, OPTIM_FIELDS
from tests.helpers import wait_for

PROMPT = "First Citizen:\nBefore we proceed"
# /train_start's inputs, in order
TRAIN_FIELDS = ("corpus", "kind", "bpe_vocab", *ARCH_FIELDS, *OPTIM_FIELDS, "val_split")
PUBLIC_ENDPOINTS = ("attention", "snapshot", "residual", "embeddings", "ffn", "next_token", "compare", "generate",
                    "data", "train_start", "train_pause", "train_resume", "train_stop", "train_status",
                    "use_shipped_model", "save_model", "load_model", "ablate", "importance_map", "model_b_shipped",
                    "model_b_copy", "model_b_zip", "model_b_nanogpt", "swap_models", "compare_models",
                    "heads", "head_examples", "head_training", "init_model", "blocks", "logit_attribution",
                    "activation_patching", "head_circuits", "composition", "grokking_model", "grokking", "features",
                    "feature", "steer", "load_sae", "train_features", "train_features_pause",
                    "train_features_resume", "train_features_stop", "train_features_status", "download_sae",
                    "attribution_graph", "graph_node", "graph_intervene", "qk_attribution", "graph_json",
                    "train_transcoders", "train_transcoders_pause", "train_transcoders_resume", "train_transcoders_stop",
                    "train_transcoders_status", "download_transcoders")
TINY = dict(corpus="first-names", kind="char", n_layers=1, n_heads=2, d_model=16, block_size=8, batch_size=8,
            lr=0.01, warmup_steps=5, eval_interval=10)


def client(url: str) -> Client:
    return Client(url, verbose=False)  # each Client has its own session hash: its own Session on the server


@pytest.fixture(scope="module")
def train_defaults(app_url) -> dict:
    """/train_start's parameters as the API describes them: {field: default}."""
    api = client(app_url).view_api(return_format="dict", print_info=False)
    params = api["named_endpoints"]["/train_start"]["parameters"]
    assert len(params) == len(TRAIN_FIELDS), [p["parameter_name"] for p in params]
    return {name: p["parameter_default"] for name, p in zip(TRAIN_FIELDS, params)}


def start(c: Client, defaults: dict, **overrides) -> str:
    values = {**defaults, **overrides}
    return c.predict(*[values[name] for name in TRAIN_FIELDS], api_name="/train_start")


def status(c: Client) -> str:
    return c.predict(api_name="/train_status")[1]


def wait_for_status(c: Client, words: tuple, timeout: float = 90.0) -> str:
    """Poll /train_status until its status line contains one of words; -> that line."""
    def shown() -> str | None:
        text = status(c)
        return text if any(w in text for w in words) else None
    return wait_for(shown, lambda: f"status showing {words}; last: {status(c)}", timeout, interval=0.3)


def step_of(status_text: str) -> int:
    return int(re.search(r"step \*\*([\d,]+) /", status_text).group(1).replace(",", ""))


def wait_for_step(c: Client, step: int, timeout: float = 90.0) -> None:
    wait_for(lambda: step_of(status(c)) >= step, lambda: f"training to reach step {step}: {status(c)}", timeout,
             interval=0.3)


def stop_quietly(c: Client) -> None:
    try:
        c.predict(api_name="/train_stop")
        wait_for_status(c, ("stopped", "finished"), timeout=60)
    except AppError:
        pass  # no run was going


def plot(value) -> dict:
    """A gr.Plot value, or a live chart's figure JSON (the clickable attention grid is one)."""
    if isinstance(value, str):
        return json.loads(value)
    assert value["type"] == "plotly"
    return json.loads(value["plot"])


def values(array) -> np.ndarray:
    """A Plotly JSON array: a plain list, or a typed array {"dtype": "f4", "bdata": base64}."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    return np.asarray(array, dtype=float)


def weights_bytes(c: Client) -> bytes:
    """The session's model weights, via /save_model."""
    with zipfile.ZipFile(c.predict(api_name="/save_model")) as zf:
        return zf.read("model.safetensors")


def test_public_api_is_exactly_the_documented_endpoints(app_url):
    api = client(app_url).view_api(return_format="dict", print_info=False)
    assert set(api["named_endpoints"]) == {f"/{name}" for name in PUBLIC_ENDPOINTS}


def test_attention_endpoint(app_url):
    grid, head, steps, bars, stats, caption = client(app_url).predict(PROMPT, 1, 1, -1, False, api_name="/attention")
    heatmaps = [t for t in plot(grid)["data"] if t["type"] == "heatmap"]
    n_heads = len(stats["data"])  # one statistics row per head of every layer
    assert len(heatmaps) == n_heads >= 2
    assert "L1·H1" in plot(head)["layout"]["title"]["text"]
    assert len(plot(steps)["data"]) >= 4 and plot(bars)["data"]
    assert "L1·H1" in caption


def test_endpoints_take_their_inputs_by_name(app_url):
    """Keyword calls name only what they change; the rest takes the controls' initial values."""
    c = client(app_url)
    by_name = c.predict(prompt="ROMEO:", layer=1, api_name="/attention")
    spelled_out = c.predict("ROMEO:", 1, 0, -1, False, api_name="/attention")  # the sliders start at 0, query -1
    assert plot(by_name[1]) == plot(spelled_out[1]) and by_name[4] == spelled_out[4] and by_name[5] == spelled_out[5]
    assert "L1·H0" in plot(by_name[1])["layout"]["title"]["text"]
    dist, _, caption = c.predict(prompt=PROMPT, top_p=0.0, api_name="/next_token")
    assert "kept 1 of" in caption
    with pytest.raises(TypeError):  # a misspelt name is refused by the client, before any request
        c.predict(promt="ROMEO:", api_name="/attention")


def test_next_token_endpoint(app_url):
    dist, temp, caption = client(app_url).predict(PROMPT, 1.0, 0, 0.0, 0.0, False, api_name="/next_token")
    after = values(plot(dist)["data"][1]["y"])
    assert np.count_nonzero(after) == 1 and after.max() == pytest.approx(1.0)  # top-p 0 keeps the best token
    assert "kept 1 of" in caption and plot(temp)["data"]


def test_compare_endpoint_one_column_per_row(app_url):
    rows = [[0.5, 0, 1.0, 0.0], [1.0, 10, 1.0, 0.0], [1.2, 0, 0.9, 0.05]]
    html = client(app_url).predict(PROMPT, {"headers": ["temperature", "top_k", "top_p", "min_p"], "data": rows},
                                   20, 0, False, api_name="/compare")
    assert html.count("class='te-col'") == 3 and "top-k 10" in html


def test_readable_errors(app_url):
    c = client(app_url)
    with pytest.raises(AppError, match="Type a prompt first"):
        c.predict("", 0, 0, -1, False, api_name="/attention")
    with pytest.raises(AppError, match="'☃'.*Drop unknown characters"):
        c.predict("snow ☃ man", 0, 0, -1, False, api_name="/attention")
    with pytest.raises(AppError, match="Temperature must be between 0 and 100, got -1"):
        c.predict(PROMPT, -1.0, 0, 1.0, 0.0, False, api_name="/next_token")
    with pytest.raises(AppError, match="at most 6"):
        c.predict(PROMPT, {"headers": ["temperature", "top_k", "top_p", "min_p"], "data": [[1, 0, 1, 0]] * 7},
                  10, 0, False, api_name="/compare")
    with pytest.raises(AppError, match="press Start"):
        c.predict(api_name="/train_pause")
    out = c.predict("snow ☃ man", 0, 0, -1, True, api_name="/attention")  # dropping them works
    assert plot(out[0])["data"]


def test_train_a_tiny_model_to_the_end(app_url, train_defaults):
    c = client(app_url)
    try:
        message = start(c, train_defaults, **TINY, max_steps=30)
        assert "Training started" in message and "first-names" in message
        final = wait_for_status(c, ("finished", "error", "❌"))
        assert "finished" in final and "30 / 30" in final, final
        losses, _, live, _, sample, _, _ = c.predict(api_name="/train_status")
        traces = {t["name"]: t for t in json.loads(losses)["data"]}
        assert max(traces["train loss (each batch)"]["x"]) == 30
        assert json.loads(live)["data"]  # the live attention figure
        grid = c.predict("anna", 0, 0, -1, False, api_name="/attention")[0]  # other tabs see the trained model
        assert len([t for t in plot(grid)["data"] if t["type"] == "heatmap"]) == 1 * 2
    finally:
        stop_quietly(c)


def test_pause_resume_stop(app_url, train_defaults):
    c = client(app_url)
    try:
        start(c, train_defaults, **TINY, max_steps=20_000)
        wait_for_step(c, 1)  # pause a run that has stepped, so "stands still" below means something
        assert "Pausing" in c.predict(api_name="/train_pause")
        paused = wait_for_status(c, ("paused",), timeout=30)
        assert {step_of(status(c)) for _ in range(10)} == {step_of(paused)} and step_of(paused) > 0  # stands still
        assert c.predict(api_name="/train_resume") == "Resumed."
        wait_for_status(c, ("running",), timeout=30)
        wait_for_step(c, step_of(paused) + 1)  # and moves again
        assert "Stopping" in c.predict(api_name="/train_stop")
        assert "stopped" in wait_for_status(c, ("stopped",), timeout=60)
    finally:
        stop_quietly(c)


def test_two_clients_are_isolated(app_url, train_defaults):
    a, b = client(app_url), client(app_url)
    before = b.predict(PROMPT, 1, 1, -1, False, api_name="/attention")
    b_weights = weights_bytes(b)
    try:
        start(a, train_defaults, corpus="shakespeare", max_steps=20_000)  # the default classroom model
        wait_for_step(a, 1)
        during = b.predict(PROMPT, 1, 1, -1, False, api_name="/attention")
        assert "No training run" in status(b)
        assert "running" in status(a)  # B was answered during A's run, not after it (its wait: bench.app)
        wait_for_step(a, step_of(status(a)) + 1)  # A's model has changed by the time it stops
    finally:
        stop_quietly(a)
    after = b.predict(PROMPT, 1, 1, -1, False, api_name="/attention")
    assert during == before and after == before
    assert weights_bytes(b) == b_weights
    assert weights_bytes(a) != b_weights  # A now inspects its stopped model
