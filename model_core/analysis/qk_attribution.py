"""Why a head attends where it does: its attention score from a query position to a key position split into
query-side parts times key-side parts (a step past circuit-tracer, whose graphs freeze attention patterns).

The residual stream entering layer L at a position is a sum of parts: the token's embedding, its position vector,
each earlier layer's attention output, each active transcoder feature's decoder row times its activation, each
transcoder's error and the rest of its FFN output (decoder bias and skip connection). The norm before attention,
with its denominator frozen, is linear in the stream plus its bias, so the head's query and key are sums of the
parts' images, plus a bias part, and the score q·k/√dh is the sum of every (query part, key part) product:
`matrix` [query parts, key parts] sums to the score the model computed."""
import math
from dataclasses import dataclass

import torch

from model_core.analysis.attribution_graph import sources_of
from model_core.analysis.replacement import ReplacementError, cached_pass, frozen_norm


@dataclass
class QKAttribution:
    query_parts: list[str]  # labels, e.g. "token 'R'", "L1 feature 123", "L0 attention", "bias"
    key_parts: list[str]
    matrix: torch.Tensor  # [query parts, key parts]: each pair's share of the score
    score: float  # the head's score (before the mask and softmax), as the model computed it

    def top_pairs(self, n: int = 10) -> list[tuple[str, str, float]]:
        """The n pairs with the largest |contribution|, largest first."""
        flat = self.matrix.flatten()
        order = flat.abs().argsort(descending=True)[:n].tolist()
        width = self.matrix.shape[1]
        return [(self.query_parts[i // width], self.key_parts[i % width], float(flat[i])) for i in order]


def stream_parts(model, run, sources, layer: int, pos: int, decode) -> tuple[list[str], torch.Tensor]:
    """(labels, vectors [P, D]) of the parts of the stream entering `layer` at `pos`; they sum to it."""
    labels = [f"token {decode(int(run.tokens[pos]))!r}", "position"]
    vectors = [model.embed.weight[run.tokens[pos]], run.position[pos]]
    for i in range(layer):
        labels.append(f"L{i} attention")
        vectors.append(run.attn_out[i, pos])
        features = sources.acts[i][pos].nonzero().flatten().tolist()
        tc = sources.transcoders[i]
        labels += [f"L{i} feature {f}" for f in features]
        vectors += [sources.acts[i][pos, f] * tc.W_dec[f] for f in features]
        decoded = sources.acts[i][pos] @ tc.W_dec
        labels += [f"L{i} error", f"L{i} FFN bias and skip"]
        vectors += [sources.errors[i, pos], run.mlp_out[i, pos] - decoded - sources.errors[i, pos]]
    return labels, torch.stack(vectors)


@torch.no_grad()
def qk_attribution(model, transcoders, tokens, layer: int, head: int, query: int, key: int,
                   decode=str) -> QKAttribution:
    """The score of `head` in `layer` from position query to position key (key <= query) of tokens [T]."""
    cfg = model.cfg
    if cfg.qk_norm or cfg.positional == "rope":
        raise ReplacementError("the score split needs queries and keys linear in the stream: this model normalises "
                               "or rotates them (qk-norm or rope).")
    tokens = torch.as_tensor(tokens, dtype=torch.long).flatten()
    if not (0 <= key <= query < len(tokens) and 0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
        raise ValueError(f"choose 0 <= key <= query < {len(tokens)}, a layer below {cfg.n_layers} and a head below "
                         f"{cfg.n_heads}.")
    run = cached_pass(model, tokens)
    sources = sources_of(run, transcoders)
    attn, norm = model.blocks[layer].attn, model.blocks[layer].ln1
    s1 = run.scales[layer][0]
    dh, kv_head = attn.d_head, head // (attn.n_heads // attn.n_kv)
    W, b = attn.W_qkv.weight, attn.W_qkv.bias
    q_rows = slice(head * dh, (head + 1) * dh)
    k_rows = slice((attn.n_heads + kv_head) * dh, (attn.n_heads + kv_head + 1) * dh)
    sides = []
    for pos, rows in ((query, q_rows), (key, k_rows)):
        labels, parts = stream_parts(model, run, sources, layer, pos, decode)  # [P, D]
        linear = frozen_norm(norm, parts, s1[pos]) - frozen_norm(norm, torch.zeros_like(parts[:1]), s1[pos])
        bias = frozen_norm(norm, torch.zeros_like(parts[:1]), s1[pos]) @ W[rows].T
        bias = bias + (b[rows] if b is not None else 0)
        sides.append((labels + ["bias"], torch.cat([linear @ W[rows].T, bias])))  # [P + 1, dh]
    (q_labels, q), (k_labels, k) = sides
    matrix = q @ k.T / math.sqrt(dh)
    return QKAttribution(q_labels, k_labels, matrix, float(run.scores[layer][head, query, key]))
