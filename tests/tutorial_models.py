"""Decoder-only models written the way notebook tutorials write them (not the seeds' code, and not ours), for the
tests of transformer_explorer.show and model_core.foreign: per-head modules with a mask buffer, a fused qkv with an
explicit softmax, and torch's scaled_dot_product_attention with grouped keys and RMSNorm."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Head(nn.Module):
    """One head of self-attention (the lecture-notes style: a tril buffer and masked_fill)."""

    def __init__(self, n_embd, head_size, block_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        k, q = self.key(x), self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        return wei @ self.value(x)


class HeadsAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.heads = nn.ModuleList([Head(n_embd, n_embd // n_head, block_size) for _ in range(n_head)])
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        return self.proj(torch.cat([h(x) for h in self.heads], dim=-1))


class FeedFoward(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.ReLU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        return self.net(x)


class LectureBlock(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.sa = HeadsAttention(n_embd, n_head, block_size)
        self.ffwd = FeedFoward(n_embd)
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        return x + self.ffwd(self.ln2(x))


class LectureLM(nn.Module):
    """Returns (logits, loss), as the lecture's model does."""

    def __init__(self, vocab_size, n_embd=32, n_head=4, n_layer=2, block_size=32):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.position_embedding_table = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[LectureBlock(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        x = self.token_embedding_table(idx) + self.position_embedding_table(torch.arange(T, device=idx.device))
        logits = self.lm_head(self.ln_f(self.blocks(x)))
        loss = None if targets is None else F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))
        return logits, loss


class FusedAttention(nn.Module):
    """All heads at once from one qkv projection, an explicit softmax over a masked score matrix."""

    def __init__(self, d_model, n_heads, max_len):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len))

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).split(D, dim=2)
        q, k, v = (t.view(B, T, self.n_heads, D // self.n_heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, D)
        return self.out(y)


class GeluMLP(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.fc, self.proj = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class FusedBlock(nn.Module):
    def __init__(self, d_model, n_heads, max_len):
        super().__init__()
        self.norm_a, self.attn = nn.LayerNorm(d_model), FusedAttention(d_model, n_heads, max_len)
        self.norm_b, self.mlp = nn.LayerNorm(d_model), GeluMLP(d_model)

    def forward(self, x):
        x = x + self.attn(self.norm_a(x))
        x = x + self.mlp(self.norm_b(x))
        return x


class TinyGPT(nn.Module):
    """Tied embeddings, a ModuleList of blocks, logits only."""

    def __init__(self, vocab_size, d_model=48, n_heads=3, n_layers=3, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.layers = nn.ModuleList([FusedBlock(d_model, n_heads, max_len) for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)
        self.unembed.weight = self.tok.weight

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for layer in self.layers:
            x = layer(x)
        return self.unembed(self.norm(x))


class GroupedAttention(nn.Module):
    """scaled_dot_product_attention with fewer key/value heads than query heads (as Llama-style notes write it)."""

    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv, self.hd = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.hd).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1, self.w2, self.w3 = nn.Linear(dim, hidden, bias=False), nn.Linear(hidden, dim, bias=False), \
            nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaishBlock(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.attention_norm, self.attention = nn.RMSNorm(dim), GroupedAttention(dim, n_heads, n_kv_heads)
        self.ffn_norm, self.feed_forward = nn.RMSNorm(dim), SwiGLU(dim, 2 * dim)

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))


class Llamaish(nn.Module):
    """No position table (the causal mask alone orders tokens): its context length is its max_seq_len attribute."""

    def __init__(self, vocab_size, dim=32, n_heads=4, n_kv_heads=2, n_layers=2, max_seq_len=48):
        super().__init__()
        self.max_seq_len = max_seq_len
        self.tok_embeddings = nn.Embedding(vocab_size, dim)
        self.layers = nn.ModuleList([LlamaishBlock(dim, n_heads, n_kv_heads) for _ in range(n_layers)])
        self.norm, self.output = nn.RMSNorm(dim), nn.Linear(dim, vocab_size, bias=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.output(self.norm(h))


def trained(model, ids: torch.Tensor, steps: int = 5, lr: float = 3e-3):
    """A few steps of next-token training on ids [B, T+1], as a notebook's loop does; the model in eval mode."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for _ in range(steps):
        out = model(ids[:, :-1])
        logits = out[0] if isinstance(out, tuple) else out
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()
