"""transformer_explorer.show in a real Jupyter kernel, executed headless with nbclient: a notebook defines a
decoder-only class in a cell (as tutorials do), trains it and the seeds' classes for a few steps, and nanoGPT's, a
Hugging Face GPT-2 and TransformerLens 4's bridge over it (from configs), shows each, compares view.cache with patterns and streams computed by hand from the weights,
and asks each view's server for /attention with gradio_client, after examples/char_gpt.ipynb runs as shipped."""
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.app

DEFINE = '''
import math, torch, torch.nn as nn, torch.nn.functional as F

class Attn(nn.Module):
    def __init__(self, d, h, ctx):
        super().__init__()
        self.h, self.q, self.k, self.v, self.o = h, nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.register_buffer("tril", torch.tril(torch.ones(ctx, ctx)))

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = (f(x).view(B, T, self.h, -1).transpose(1, 2) for f in (self.q, self.k, self.v))
        w = (q @ k.transpose(-2, -1)) * (d // self.h) ** -0.5
        w = F.softmax(w.masked_fill(self.tril[:T, :T] == 0, float("-inf")), dim=-1)
        return self.o((w @ v).transpose(1, 2).reshape(B, T, d))

class Layer(nn.Module):
    def __init__(self, d, h, ctx):
        super().__init__()
        self.n1, self.att, self.n2 = nn.LayerNorm(d), Attn(d, h, ctx), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.att(self.n1(x))
        return x + self.mlp(self.n2(x))

class NotebookGPT(nn.Module):
    def __init__(self, vocab, d=32, h=2, n=2, ctx=32):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.layers = nn.ModuleList([Layer(d, h, ctx) for _ in range(n)])
        self.norm, self.out = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.emb(idx) + self.pos(torch.arange(idx.shape[1]))
        for layer in self.layers:
            x = layer(x)
        return self.out(self.norm(x))

def by_hand(m, ids):
    x = m.emb(ids[0]) + m.pos.weight[: ids.shape[1]]
    patterns, streams = [], []
    for layer in m.layers:
        h, a = layer.n1(x), layer.att
        q, k = (f(h).view(len(h), a.h, -1).transpose(0, 1) for f in (a.q, a.k))
        patterns.append(hand_pattern(q, k, q.shape[-1]))
        x = layer(x[None])[0]
        streams.append(x)
    return patterns, streams
'''

CHECK = '''
import transformer_explorer as tx
from gradio_client import Client
from tests import nanogpt_model, tutorial_models as tm
from tests.test_foreign import CASES, hand_pattern, trained_case, hf_tokenizer
import transformers

text = "first citizen: before we proceed any further, hear me speak."
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
V = len(chars)
checked = []

def check(model, tokenizer, by_hand=None, own_logits=None, prompt=text[:12]):
    view = tx.show(model, tokenizer)
    cache = view.cache(prompt)
    ids = torch.tensor([view.checkpoint.tokenizer.encode(prompt)])
    T = ids.shape[1]
    L = sum(1 for name in cache if name.endswith("attn.hook_pattern"))
    for layer in range(L):
        p = cache[f"blocks.{layer}.attn.hook_pattern"]
        assert p.shape[1:] == (T, T) and torch.allclose(p.sum(-1), torch.ones(p.shape[:-1]), atol=1e-5)
    assert cache[f"blocks.{L - 1}.hook_resid_post"].shape[0] == T and cache["logits"].shape[0] == T
    if by_hand is not None:
        with torch.no_grad():
            patterns, streams = by_hand(model, ids)
        for layer, (p, s) in enumerate(zip(patterns, streams)):
            torch.testing.assert_close(cache[f"blocks.{layer}.attn.hook_pattern"], p, atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(cache[f"blocks.{layer}.hook_resid_post"], s,
                                       atol=1e-5 * max(1.0, float(s.abs().max())), rtol=1e-4)
    if own_logits is not None:
        own = own_logits(ids)
        torch.testing.assert_close(cache["logits"], own, atol=1e-5 * max(1.0, float(own.abs().max())), rtol=1e-4)
    grid, big, *_ = Client(view.local_url, verbose=False).predict(prompt=prompt, layer=L - 1, head=0, query=0,
                                                                  api_name="/attention")
    assert big, "no chart"
    checked.append(type(model).__name__)
    view.close()

torch.manual_seed(0)
model = tm.trained(NotebookGPT(V), torch.tensor([[stoi[c] for c in text[i:i + 17]] for i in range(0, 40, 10)]))
check(model, stoi, by_hand, lambda ids: model(ids)[0].detach())
for name in CASES:
    m, hand, vocab, T = trained_case(name)
    names = [chr(97 + i) for i in range(vocab)]
    check(m, names, hand, prompt="".join(names[i % vocab] for i in range(T)))
nano = nanogpt_model.GPT(nanogpt_model.GPTConfig(vocab_size=V)).eval()
check(nano, chars, own_logits=lambda ids: nano(ids, targets=ids)[0][0].detach())
gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=50, n_positions=32, n_embd=32, n_layer=2,
                                                            n_head=4)).eval()
check(gpt2, hf_tokenizer(transformers), own_logits=lambda ids: gpt2(ids).logits[0].detach(), prompt="a cab")

import tempfile
from transformer_lens.model_bridge import TransformerBridge
folder = tempfile.mkdtemp()  # TransformerLens 4 reads the model's config from a folder (HF_HUB_OFFLINE: never the hub)
gpt2.config.save_pretrained(folder)
bridge = TransformerBridge.boot_transformers(folder, hf_model=gpt2, tokenizer=hf_tokenizer(transformers)).eval()
check(bridge, hf_tokenizer(transformers), own_logits=lambda ids: bridge(ids)[0].detach(), prompt="a cab")
print("checked:", ", ".join(checked))
'''


def executed(nb, timeout: int = 240):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1",
           "TX_GENERATION_PATH": "float32", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": ROOT}})
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits this environment
    try:
        client.execute()
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return nb


def outputs(cells) -> str:
    parts = []
    for cell in cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.append(str(out.get("data", {}).get("text/html", "")))
    return "\n".join(parts)


def test_the_example_notebook_runs_then_each_kind_of_model_shows_the_numbers_computed_by_hand():
    """One kernel (its imports of torch and Gradio are most of the time): examples/char_gpt.ipynb as shipped (two
    seconds of training), then cells that define, train, show and check every kind of model."""
    nb = nbformat.read(ROOT / "examples" / "char_gpt.ipynb", as_version=4)
    params = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1 and "TRAIN_SECONDS = 60" in params[0].source
    params[0].source = "TRAIN_SECONDS = 2"
    shipped = len(nb.cells)
    nb.cells += [nbformat.v4.new_code_cell("from tests.test_foreign import hand_pattern"),
                 nbformat.v4.new_code_cell(DEFINE), nbformat.v4.new_code_cell(CHECK)]
    executed(nb)
    example, checks = outputs(nb.cells[:shipped]), outputs(nb.cells[shipped:])
    assert "each row sums to 1: True" in example and '<iframe src="http://127.0.0.1:' in example
    assert "torch.Size([4, 7, 7]) torch.Size([7, 64]) torch.Size([7, 64])" in example  # 64 characters in the text
    assert "checked: NotebookGPT, LectureLM, TinyGPT, Llamaish, GPT, BabyNamesModel, DecoderOnlyTransformer, GPT, " \
           "GPT2LMHeadModel, TransformerBridge" in checks
    assert checks.count("<iframe src=") == 10
