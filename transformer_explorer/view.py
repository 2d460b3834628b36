"""show(): the explorer served from this Python process (the notebook's kernel) on a free port, shown in the cell's
output; under JupyterHub through the single-user server's proxy (jupyter-server-proxy's /proxy/<port>/)."""
import contextlib
import html
import io
import itertools
import os
import socket
import threading
import urllib.parse
import uuid
import warnings
from typing import Optional

import torch

from transformer_explorer.opening import ShowError, opened

_SERVER: dict = {}  # "demo", "port", "root": the one app this process serves
_VIEWS: list = []  # the open Views
_NUMBER = itertools.count(1)
_LOCK = threading.Lock()
HEIGHT = 900  # pixels of the cell's frame


class View:
    """One shown model: url (what a browser opens), local_url (this machine), cache(prompt), close()."""

    def __init__(self, name: str, checkpoint, url: str, local_url: str, height: int):
        self.name, self.checkpoint, self.url, self.local_url, self.height = name, checkpoint, url, local_url, height
        self.closed = False

    @property
    def prompt(self) -> str:
        """The prompt the view's tabs open on."""
        from explorer.common.controls import DEFAULT_PROMPT

        return self.checkpoint.prompt or DEFAULT_PROMPT

    def cache(self, prompt: Optional[str] = None) -> dict:
        try:
            return self._cache(prompt)
        except (ShowError, ValueError) as err:  # one sentence, not a trace through this package
            raise ShowError(str(err)) from None

    def _cache(self, prompt: Optional[str]) -> dict:
        """The activations the app draws for prompt (default: the one the view opened on), by TransformerLens's
        names, batch dimension dropped (ShowError, one sentence, for a prompt it cannot read):
        blocks.{L}.attn.hook_pattern [n_heads, T, T], blocks.{L}.hook_resid_pre / hook_resid_post [T, d_model],
        logits [T, vocab] (and whatever else the model shows: attn_scores, z, attn_out, mlp_out...)."""
        if self.closed:
            raise ShowError(f"{self.name} was closed: show the model again.")
        ids = self.checkpoint.tokenizer.encode(self.prompt if prompt is None else prompt)
        if not ids:
            raise ShowError("The prompt is empty.")
        if len(ids) > self.checkpoint.model.cfg.block_size:
            raise ShowError(f"The prompt is {len(ids)} tokens; the model reads at most "
                            f"{self.checkpoint.model.cfg.block_size}.")
        with torch.no_grad():
            logits, cache = self.checkpoint.model.run_with_cache(torch.tensor([ids]))
        out = {name: t[0].float() for name, t in cache.items()}
        out["logits"] = logits[0].float()
        return out

    def close(self) -> None:
        """Stop showing this model; the server stops with the last open view."""
        from explorer.state.shipped import remove_in_memory

        with _LOCK:
            if self.closed:
                return
            self.closed = True
            remove_in_memory(self.name)
            _VIEWS.remove(self)
            if not _VIEWS and "demo" in _SERVER:
                _SERVER.pop("demo").close()
                _SERVER.clear()

    def __repr__(self) -> str:
        return f"View({self.name!r}, url={self.url!r})"


def show(model, tokenizer=None, *, prompt: Optional[str] = None, height: int = HEIGHT, display: bool = True) -> View:
    """Open model (any decoder-only PyTorch module, with its tokenizer) in the explorer, inside the cell's output;
    prompt: what its tabs open on (default: the app's Shakespeare lines, or what the vocabulary can spell of them).
    Calling it again (after more training) shows the weights as they are then; the earlier view keeps its own."""
    try:
        checkpoint = opened(model, tokenizer, prompt)
    except ShowError as err:  # one sentence, not a trace through this package
        raise ShowError(str(err)) from None
    with _LOCK:
        number = next(_NUMBER)
        name = f"notebook {number}: {type(model).__name__}"
        from explorer.state.shipped import add_in_memory

        add_in_memory(name, checkpoint)
        port = serving(name)
        query = f"?view={number}&model={urllib.parse.quote(name)}"  # each view a session (and model) of its own
        view = View(name, checkpoint, browser_url(port) + query, f"http://127.0.0.1:{port}/", height)
        _VIEWS.append(view)
    if display:
        shown(view)
    return view


def serving(name: str) -> int:
    """The port of the app this process serves, started on first use; new pages open on model `name`."""
    from explorer.common import app_state

    app_state.default_model = name
    if "demo" not in _SERVER:
        os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
        os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
        from explorer.server.launch import configured_app, parse_args, start

        port = free_port()
        root = proxy_prefix(port)
        args = parse_args(["--single-user", "--port", str(port), "--model", name, "--root-path", root,
                           "--torch-threads", str(max(1, torch.get_num_threads()))])
        args.quiet, args.class_link = True, False  # the student's explorer tile reports to the class, not this
        # the cell shows the explorer, not the server's start-up lines; a library's tqdm.auto finds no ipywidgets
        warnings.filterwarnings("ignore", message="IProgress not found")
        with contextlib.redirect_stdout(io.StringIO()):
            demo = configured_app(args)
            start(demo, args)
        _SERVER.update(demo=demo, port=port)
    return _SERVER["port"]


def proxy_prefix(port: int) -> str:
    """The path the page is served under: the Jupyter server's proxy when the kernel runs under JupyterHub (the
    browser cannot reach this machine's 127.0.0.1 there), else none."""
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX")
    return f"{prefix.rstrip('/')}/proxy/{port}" if prefix else ""


def browser_url(port: int) -> str:
    root = proxy_prefix(port)
    return f"{root}/" if root else f"http://127.0.0.1:{port}/"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PAGE_WIDTH = 1280  # px: the narrowest window the app's charts are laid out for (explorer.figures.common)


FIT = """<script>(() => {{
  const box = document.getElementById("{id}"), page = box.firstElementChild;
  const fit = () => {{
    const k = Math.max({smallest}, Math.min(1, box.clientWidth / {width}));
    page.style.transform = `scale(${{k}})`;
    box.style.height = `${{Math.ceil({height} * k) + 2}}px`;
    box.style.overflowX = k > {smallest} ? "hidden" : "auto";
  }};
  fit();
  new ResizeObserver(fit).observe(box);
}})();</script>"""


def frame(url: str, height: int) -> str:
    """The cell output: the explorer in a frame laid out PAGE_WIDTH wide, as its charts are drawn for, and scaled
    down to the cell's width (to 60 % at most; a narrower cell scrolls sideways; where the output may run no script,
    it scrolls), with a link that opens it full size in a tab of its own."""
    src, box = html.escape(url, quote=True), f"tx-{uuid.uuid4().hex[:12]}"
    return (f'<div id="{box}" style="width:100%;overflow-x:auto"><iframe src="{src}" title="Transformer Explorer" '
            f'style="width:{PAGE_WIDTH}px;height:{int(height)}px;border:1px solid #ddd;transform-origin:0 0">'
            f'</iframe></div>' + FIT.format(id=box, width=PAGE_WIDTH, height=int(height), smallest=0.6)
            + f'<div><a href="{src}" target="_blank" rel="noopener">Open the explorer full size in its own tab</a>'
            ' · it runs in this notebook\'s kernel: an empty frame after a restart comes back when the cell runs again'
            '</div>')


def shown(view: View) -> None:
    try:
        from IPython.display import HTML, display
    except ImportError:  # not in IPython: the url is the way in
        print(f"Transformer Explorer: {view.url}")
        return
    display(HTML(frame(view.url, view.height)))


def current() -> Optional[View]:
    """The newest open view."""
    return _VIEWS[-1] if _VIEWS else None
