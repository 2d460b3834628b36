"""tx.show in a JupyterLab cell, in Chromium: the explorer appears in the cell's output and draws its Attention
charts. JupyterLab runs as a JupyterHub single-user server would (base URL /user/ana/, JUPYTERHUB_SERVICE_PREFIX
set), so the frame reaches the kernel's app through jupyter-server-proxy's /user/ana/proxy/<port>/, not 127.0.0.1."""
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from bench.server_process import free_port
from tests.browser_helpers import PANEL_STATE, TIMEOUT_MS, painted, screenshot

pytest.importorskip("jupyterlab")
pytest.importorskip("jupyter_server_proxy")
ROOT = Path(__file__).resolve().parents[1]
PREFIX = "/user/ana/"

CELL = """import torch, torch.nn as nn, torch.nn.functional as F
import transformer_explorer as tx

class Net(nn.Module):
    def __init__(self, vocab, d=32, heads=4, layers=2, ctx=32):
        super().__init__()
        self.heads, self.emb, self.pos = heads, nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.qkv = nn.ModuleList([nn.Linear(d, 3 * d) for _ in range(layers)])
        self.blocks = nn.ModuleList([Step(d, heads) for _ in range(layers)])
        self.out = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.emb(idx) + self.pos(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.out(x)

class Step(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.qkv, self.o, self.ln = heads, nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d)

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = self.qkv(self.ln(x)).view(B, T, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.o(y.transpose(1, 2).reshape(B, T, d))

text = "to be or not to be, that is the question"
stoi = {c: i for i, c in enumerate(sorted(set(text)))}
torch.manual_seed(0)
model = Net(len(stoi))
view = tx.show(model, stoi, prompt="to be or not to be", height=700)
"""
SECOND = """model_b = Net(len(stoi), layers=1)
view_b = tx.show(model_b, stoi, prompt="that is the question", height=500)
"""


@pytest.fixture
def lab(tmp_path):
    """JupyterLab on a free port under /user/ana/, as JupyterHub's single-user server runs it; ended with its
    kernels at the end."""
    port, token = free_port(), secrets.token_hex(8)
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
                          for source in (CELL, SECOND)],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "show.ipynb").write_text(json.dumps(notebook))
    settings = tmp_path / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')  # no news pop-up
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTERHUB_SERVICE_PREFIX": PREFIX, "HOME": str(tmp_path),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "IPYTHONDIR": str(tmp_path / "ipython"), "GRADIO_ANALYTICS_ENABLED": "False",
           "HF_HUB_DISABLE_TELEMETRY": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.token={token}", f"--ServerApp.base_url={PREFIX}", f"--ServerApp.root_dir={tmp_path}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "lab.log", "wb"), start_new_session=True)
    url = f"http://127.0.0.1:{port}{PREFIX}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{url}api/status", params={"token": token}, timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            assert proc.poll() is None, "JupyterLab ended at start-up"
            time.sleep(0.3)
        yield url, token, tmp_path
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.timeout(300)
def test_the_explorer_opens_inside_a_jupyterlab_cell_through_the_servers_proxy(lab, browser):
    url, token, folder = lab
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{url}lab/tree/show.ipynb?token={token}")
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()  # the kernel is up
    page.keyboard.press("Shift+Enter")
    page.locator("iframe[title='Transformer Explorer']").wait_for()
    page.locator("iframe[title='Transformer Explorer']").scroll_into_view_if_needed()
    frame = frame_showing(page, "view=1")
    assert frame.url.startswith(f"{url}proxy/"), frame.url  # the browser never reaches the kernel's 127.0.0.1 port
    try:
        frame.wait_for_function(f"() => ({PANEL_STATE})().plots >= 4")  # the Attention tab drew its charts
    except Exception:
        screenshot(page, "notebook_inline_explorer_failed")
        print("JupyterLab's log ends:", (folder / "lab.log").read_text()[-3000:])
        raise
    assert "Inspecting notebook 1: Net" in frame.locator("#te-model-info").inner_text()
    assert "Read from Net's own forward pass" in frame.locator("#te-model-info").inner_text()
    assert frame.get_by_label("Prompt").first.input_value() == "to be or not to be"
    frame.wait_for_function(f"() => ({PANEL_STATE})().busy === 0")
    frame.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    painted(page)
    screenshot(page, "notebook_inline_explorer")

    # a second model in the next cell opens in a session of its own: the first frame, reloaded, keeps its model
    page.keyboard.press("Shift+Enter")
    page.locator("iframe[title='Transformer Explorer']").nth(1).wait_for()
    second = frame_showing(page, "view=2")
    second.wait_for_function(f"() => ({PANEL_STATE})().plots >= 4")
    assert "Inspecting notebook 2: Net: 1 layer" in second.locator("#te-model-info").inner_text()
    assert second.get_by_label("Prompt").first.input_value() == "that is the question"
    frame.goto(frame.url)
    frame.wait_for_function(f"() => ({PANEL_STATE})().plots >= 4")
    assert "Inspecting notebook 1: Net: 2 layers" in frame.locator("#te-model-info").inner_text()


def frame_showing(page, part: str, seconds: float = 30.0):
    """The page's frame whose address holds part, once it has navigated there."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [f for f in page.frames if part in f.url]
        if found:
            return found[0]
        page.wait_for_timeout(100)
    raise AssertionError(f"no frame at an address with {part}: {[f.url for f in page.frames]}")
