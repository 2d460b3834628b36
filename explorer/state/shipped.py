"""The demo models that ship in explorer/assets/models/, and a fallback when they are missing."""
import atexit
import functools
import os
import threading
import traceback
from dataclasses import replace

import torch

from explorer.common.shipped_list import (
    IN_MEMORY,
    MODELS_DIR,
    PRETRAINED,
    check_model_name,
    pretrained_path,
    shipped_models,
)
from model_core import GPT
from model_core.checkpoints.checkpoint import Checkpoint, load_checkpoint
from model_core.data.chat import chat_stop_token, check_prompts
from model_core.data.corpora import load_corpus
from model_core.data.tokenization import build_tokenizer
from model_core.model.generation_paths import Cancelled
from model_core.training.presets import get_preset


def load_shipped(name: str) -> Checkpoint:
    """A shipped checkpoint with a model of its own (hooks are per model object), sharing the read-only
    history and snapshots with every other session that opened it; an untrained classroom model on
    Shakespeare if the assets are missing."""
    template = shipped_template(name)
    return replace(template, model=template.model.copy())


def shipped_template(name: str) -> Checkpoint:
    """The shipped checkpoint every session shares, its model included: read-only (explorer.state.session copies
    the model before a session uses it)."""
    return _IN_MEMORY[name] if name in _IN_MEMORY else _loaded(name)


_IN_MEMORY: dict[str, Checkpoint] = {}  # name -> a model a notebook showed (transformer_explorer.show)


def add_in_memory(name: str, ckpt: Checkpoint) -> None:
    """Serve ckpt under name, as a shipped model (sessions copy its model before they use it)."""
    _IN_MEMORY[name] = ckpt
    if name not in IN_MEMORY:
        IN_MEMORY.insert(0, name)


def remove_in_memory(name: str) -> None:
    _IN_MEMORY.pop(name, None)
    if name in IN_MEMORY:
        IN_MEMORY.remove(name)


# TX_GENERATION_PATH=float32: generate in float32 and never measure the faster paths (measuring SmolLM2's took
# 27 CPU-seconds at its first open in each process; the test suite, where five processes open it, sets this)
GENERATION_PATH_ENV = "TX_GENERATION_PATH"
_PATHS_CHOSEN: list[str] = []  # the pretrained models whose generation paths have been chosen
_PICKERS: list[threading.Thread] = []  # the threads that choose them
_STOPPING = threading.Event()  # the process is ending: the pickers stop


_OPENED: set[str] = set()  # the shipped models this process has loaded (a second open takes no time)


@functools.lru_cache(maxsize=8)
def _loaded(name: str) -> Checkpoint:
    check_model_name(name)
    if name in PRETRAINED:
        ckpt = load_pretrained(name)
    else:
        ckpt = load_checkpoint(MODELS_DIR / name) if name in shipped_models() else untrained_default()
    _OPENED.add(name)
    return ckpt


def is_open(name: str) -> bool:
    """Whether this process has loaded the shipped model already (its template is kept: opening it is instant)."""
    return name in _OPENED


def models_loaded() -> int:
    """How many shipped models this process has loaded so far, and generation paths chosen (a pretrained one's
    loader frees ~200 MB of temporaries, the choice the twins it did not keep: the server's sweeper then hands
    them back to the kernel)."""
    return _loaded.cache_info().currsize + len(_PATHS_CHOSEN)


def load_pretrained(name: str) -> Checkpoint:
    """A pretrained language model from the file its installed package carries (dequantised to float32)."""
    from model_core.checkpoints.gguf import load_gguf

    entry = PRETRAINED[name]
    ckpt = load_gguf(pretrained_path(name), block_size=entry.block_size)
    ckpt.corpus = f"pretrained: {entry.title}"
    ckpt.model.freeze()  # never trained here: every session's copy shares these weights
    if os.environ.get(GENERATION_PATH_ENV, "measure") != "float32":
        pick_generation_path_soon(name, ckpt)
    return ckpt


def pick_generation_path_soon(name: str, ckpt: Checkpoint) -> threading.Thread:
    """Measure which way the pretrained model generates fastest on this machine (GPT.pick_generation_path) in a
    thread of its own, and print the choice; until it has chosen, generation reads the weights in float32."""
    tok = ckpt.tokenizer
    template = getattr(tok, "chat_template", None)
    checks, stop = check_prompts(template, tok.encode), chat_stop_token(template, tok.encode)

    def pick():
        try:
            print(f"{name} {ckpt.model.pick_generation_path(checks, stop, _STOPPING.is_set).sentence()}", flush=True)
            _PATHS_CHOSEN.append(name)
        except Cancelled:
            pass
        except Exception:  # noqa: BLE001 - generation goes on in float32
            print(f"{name}: measuring its generation paths failed; it generates in float32:", flush=True)
            traceback.print_exc()

    thread = threading.Thread(target=pick, name="generation-path", daemon=True)
    _PICKERS.append(thread)
    thread.start()
    return thread


@atexit.register
def stop_picking(timeout: float = 30.0) -> None:
    """At exit, stop the generation-path threads and wait for them (one step each): a thread still inside a torch
    operation when the interpreter tears down aborts the process ("terminate called without an active exception",
    exit code 134). Scripts, tests and benchmarks that open a pretrained model end that way; the app leaves with
    os._exit (server.launch.shutdown), before any teardown."""
    _STOPPING.set()
    for thread in _PICKERS:
        thread.join(timeout)


def untrained_default() -> Checkpoint:
    tokenizer = build_tokenizer("char", load_corpus("shakespeare"))
    torch.manual_seed(0)
    model = GPT(get_preset("classroom").model_config(tokenizer.vocab_size)).eval()
    return Checkpoint(model, tokenizer, corpus="shakespeare (untrained: run `make assets`)")
