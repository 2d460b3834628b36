"""What more than one test module uses: tiny random models (a few hundred to a few thousand parameters), tiny
sessions, the launched app's process, a poll with a deadline, and float tolerances that scale with the dtype.
Fixtures live in conftest.py; a test module never imports another test module."""
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from bench.server_process import descendants, free_port, rss_mb, wait_for_app  # noqa: F401 - the tests' way to launch an app and watch its processes
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from explorer.state.workspace import DataChoice
from model_core import GPT, GPTConfig
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.data.dataset import token_tensor, train_val_split
from model_core.data.tokenization import build_tokenizer
from model_core.model.kv_cache import KVCache
from model_core.training.snapshots import take_snapshot

ROOT = Path(__file__).resolve().parent.parent
APP_PIDS: dict[str, int] = {}  # the app_url fixture's URL -> the app's process id (for RSS and process checks)


def tiny_config(**overrides) -> GPTConfig:
    base = dict(vocab_size=11, block_size=8, d_model=8, n_heads=2, n_layers=2)
    base.update(overrides)
    return GPTConfig(**base)


def tiny_model(seed: int = 0, **overrides) -> GPT:
    torch.manual_seed(seed)
    return GPT(tiny_config(**overrides)).eval()


LLAMA = dict(norm="rmsnorm", positional="rope", activation="swiglu", bias=False)  # SmolLM2's kind of model


def grid_weights(shape, seed: int) -> torch.Tensor:
    """Weights on a 4-bit grid per group of 32 along the input, as a Q4_1 GGUF file holds them: low + step * q,
    every group using q = 0 and q = 15 (llama.cpp puts its smallest and largest weight there)."""
    g = torch.Generator().manual_seed(seed)
    groups = shape[1] // 32
    q = torch.randint(0, 16, (shape[0], groups, 32), generator=g)
    q[..., 0], q[..., 1] = 0, 15
    low = -torch.rand(shape[0], groups, 1, generator=g) * 0.2
    step = torch.rand(shape[0], groups, 1, generator=g) * 0.02 + 0.001
    return (low + step * q).view(shape)


def frozen_grid_model(**kind) -> GPT:
    """A tiny frozen model (a pretrained one's stand-in) whose linear weights, all but the unembedding, sit on a
    4-bit grid, so that every generation path applies."""
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=96, block_size=32, d_model=64, n_heads=4, n_kv_heads=2, n_layers=2, d_mlp=128,
                    **(kind or LLAMA))
    model = GPT(cfg).eval()
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            if p.dim() == 2 and "embed" not in name:
                p.copy_(grid_weights(p.shape, i))
    return model.freeze()


def tokens(model: GPT, T: int = 7, batch: int = 2, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.cfg.vocab_size, (batch, T), generator=g)


def assert_plotly_would_send_the_same(fig) -> None:
    """Our figures skip plotly.py's validation (explorer.figures.plain): plotly.py, given the same figure, must
    accept every property and send Plotly.js the same data and layout (the template aside: ours keeps the trace
    kinds the figure uses)."""
    import json

    import plotly.graph_objects as go

    ours = json.loads(fig.to_json())
    theirs = json.loads(go.Figure(fig.to_plotly_json()).to_json())  # raises on any unknown property
    assert ours["layout"].pop("template")["layout"] == theirs["layout"].pop("template")["layout"]
    assert ours == theirs


def extended_logits(model: GPT, idx: torch.Tensor, chunks: list[int]) -> torch.Tensor:
    """Logits (B, T, V) of idx fed to GPT.extend in chunks of these sizes."""
    cache, out, start = KVCache.for_model(model, idx.size(0)), [], 0
    for size in chunks:
        out.append(model.extend(idx[:, start:start + size], cache))
        start += size
    assert cache.length == start
    return torch.cat(out, dim=1)


def sum_tolerance(*terms, dtype: torch.dtype = torch.float32, ulps: float = 64.0) -> float:
    """An absolute tolerance for a value computed as a sum of these terms (numbers or arrays) in dtype: `ulps`
    rounding steps of the dtype at the size of the terms, sum(|term|), not of the result. Float32 sums differ
    between CPUs (Intel and AMD kernels add in different orders), and when terms cancel the result is small
    while the error stays the size of the terms."""
    magnitude = sum(float(np.abs(np.asarray(t, dtype=np.float64)).sum()) for t in terms if t is not None)
    return ulps * torch.finfo(dtype).eps * magnitude


def wait_for(condition: Callable, what: str | Callable[[], str] = "the condition", timeout: float = 30.0,
             interval: float = 0.02):
    """Call condition() every interval seconds until it returns something true; -> that value. After timeout
    seconds, fail with what was awaited (a sentence, or a function that describes the state at the deadline)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what() if callable(what) else what}")
        time.sleep(interval)
    return value


# The callbacks' session: a char model of 3 layers x 2 heads (so that L x H, 6, differs from L + H, 5).
TEXT = "First Citizen:\nBefore we proceed any further, hear me speak."
PROMPT = "First Citizen"
N_LAYERS, N_HEADS, BLOCK = 3, 2, 16


def tiny_session(seed: int = 0, name: str = "tiny") -> Session:
    tokenizer = build_tokenizer("char", TEXT)
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=BLOCK, d_model=16, n_heads=N_HEADS,
                          n_layers=N_LAYERS))
    return Session(Inspected(Checkpoint(model.eval(), tokenizer), name))


HEADS_TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\nAll:\nSpeak, speak.\n" * 4


def data_session(attn_only: bool = False, with_data: bool = True, snapshots: bool = False) -> Session:
    """A 2-layer x 2-head char model on HEADS_TEXT, with that text prepared as the session's data (the Heads and
    Circuits tabs measure on it) and, if asked, two training snapshots."""
    tokenizer = build_tokenizer("char", HEADS_TEXT)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=16, d_model=16, n_heads=2, n_layers=2,
                          attn_only=attn_only)).eval()
    snaps = [take_snapshot(model, tokenizer.encode("First Citizen"), step) for step in (0, 10)] if snapshots else []
    session = Session(Inspected(Checkpoint(model, tokenizer, snapshots=snaps), "tiny"))
    if with_data:
        train, val = train_val_split(token_tensor(tokenizer.encode(HEADS_TEXT)), 0.7)
        session.workspace.data = DataChoice("tiny text", HEADS_TEXT[:20], len(HEADS_TEXT), tokenizer, train, val)
    return session


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@contextlib.contextmanager
def app_process(log_path: Path):
    """`python app.py` on a free port, its output in log_path, until it answers; -> (process, its URL). Killed on the
    way out if it is still running (a signal test ends it itself)."""
    port = free_port()
    with open(log_path, "w") as log:
        app = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, stdout=log,
                               stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_for_app(port, app)
        yield app, f"http://127.0.0.1:{port}/"
    finally:
        if app.poll() is None:
            app.kill()


def node_position(key: str, n_pos: int) -> int:
    """The prompt position of an attribution graph's node key (explorer.callbacks.graph_nodes; a logit's is the
    last)."""
    kind, *numbers = key.split(":")
    return int({"F": lambda: numbers[1], "E": lambda: numbers[1], "T": lambda: numbers[0]}.get(
        kind, lambda: n_pos - 1)())


def graph_edges_across(edges: list[str], n_pos: int) -> list[str]:
    """The edges ('source key>target key') between two positions: those attention carries."""
    return [e for e in edges if len({node_position(k, n_pos) for k in e.split(">")}) == 2]
