"""The attribution graph of a prompt's next token, computed as circuit-tracer computes it (Ameisen et al. 2025).

Nodes, in circuit-tracer's order: the active transcoder features (layer, position, feature) sorted, one error node
per layer and position (what the transcoder missed of the FFN's output), one token node per position (its
embedding), and the top logits (by probability until 95 % of the mass, at most 10). An edge A[t, s] is the direct
effect of source s on target t in the local replacement model (model_core.analysis.replacement: attention patterns
and norm denominators frozen, so every path is linear): a feature's activation times its decoder row, an error
vector or a token embedding, carried through the frozen attention, norms and skip connections (but through no
other feature) to the target's encoder row (a feature's pre-activation) or demeaned unembedding column (a logit
less the mean logit). Features and errors at position 0 are zeroed: circuit-tracer expects a BOS token there; our
prompts start with a start token (the app puts a newline first), so both sides compute the same graph.

So each target's value is the sum of its row plus a constant no node explains (biases, position vectors, position
0's FFN outputs): `constants`. Rows of error and token nodes are empty (nothing in the graph feeds them)."""
from dataclasses import dataclass

import torch

from model_core.analysis.replacement import CachedPass, cached_pass, frozen_forward

MAX_LOGITS = 10  # circuit-tracer's max_n_logits
LOGIT_MASS = 0.95  # circuit-tracer's desired_logit_prob
BATCH = 256  # targets per backward pass


@dataclass
class AttributionGraph:
    tokens: torch.Tensor  # [T] the prompt, position 0 a start token
    active_features: torch.Tensor  # [n, 3] (layer, position, feature), sorted
    activations: torch.Tensor  # [n]
    logit_tokens: torch.Tensor  # [k] token ids, most probable first
    logit_probabilities: torch.Tensor  # [k]
    adjacency: torch.Tensor  # [N, N] rows = targets, columns = sources (N = n + L*T + T + k)
    values: torch.Tensor  # [N] each target's value: a feature's pre-activation, a logit less the mean logit; 0 else
    n_layers: int

    @property
    def n_pos(self) -> int:
        return len(self.tokens)

    @property
    def n_features(self) -> int:
        return len(self.active_features)

    @property
    def error_start(self) -> int:
        return self.n_features

    @property
    def token_start(self) -> int:
        return self.n_features + self.n_layers * self.n_pos

    @property
    def logit_start(self) -> int:
        return self.token_start + self.n_pos

    @property
    def n_nodes(self) -> int:
        return self.logit_start + len(self.logit_tokens)

    @property
    def constants(self) -> torch.Tensor:
        """[N] what no node explains of each target's value (values - row sums; 0 for sources without inputs)."""
        constant = self.values - self.adjacency.sum(1)
        constant[self.error_start:self.logit_start] = 0
        return constant

    def kind(self, node: int) -> str:
        """"feature", "error", "token" or "logit"."""
        if node < self.error_start:
            return "feature"
        if node < self.token_start:
            return "error"
        return "token" if node < self.logit_start else "logit"

    def place(self, node: int) -> tuple[int, int]:
        """(layer, position) of a node: tokens at layer -1, logits at layer n_layers and the last position."""
        kind = self.kind(node)
        if kind == "feature":
            layer, pos, _ = self.active_features[node].tolist()
            return layer, pos
        if kind == "error":
            return divmod(node - self.error_start, self.n_pos)
        if kind == "token":
            return -1, node - self.token_start
        return self.n_layers, self.n_pos - 1


def logit_targets(logits: torch.Tensor, max_logits: int = MAX_LOGITS, mass: float = LOGIT_MASS):
    """(token ids [k], probabilities [k]): the most probable tokens until their probabilities reach mass."""
    probs = torch.softmax(logits.float(), dim=-1)
    top = probs.topk(min(max_logits, len(probs)))
    k = int(torch.searchsorted(top.values.cumsum(0), torch.tensor(mass))) + 1
    return top.indices[:k], top.values[:k]


def demeaned_unembedding(model, token_ids: torch.Tensor) -> torch.Tensor:
    """[k, D]: each token's unembedding row less the mean row (a logit less the mean logit is its product)."""
    W_U = model.unembed.weight  # [V, D]
    return W_U[token_ids] - W_U.mean(0)


@dataclass
class _Sources:
    """The source nodes' vectors: what each writes into the replacement model's inputs."""
    acts: list  # per layer [T, d_tc], position 0 zeroed
    errors: torch.Tensor  # [L, T, D], position 0 zeroed
    ffn_rest: torch.Tensor  # [L, T, D]: each FFN's output less its skip part (features + error + constants)
    transcoders: list

    def acts_of(self, active: torch.Tensor) -> torch.Tensor:
        """[n] the activations of the active features [n, 3]."""
        layers, positions, features = active.unbind(1)
        return torch.stack(self.acts)[layers, positions, features]


def sources_of(run: CachedPass, transcoders) -> _Sources:
    acts, errors, rest = [], [], []
    for i, tc in enumerate(transcoders):
        x = run.mlp_in[i]  # [T, D]
        a = tc.encode(x)
        a[0] = 0
        made = a @ tc.W_dec + tc.b_dec + tc.skip(x)
        error = run.mlp_out[i] - made
        error[0] = 0
        acts.append(a)
        errors.append(error)
        rest.append(run.mlp_out[i] - tc.skip(x))
    return _Sources(acts, torch.stack(errors), torch.stack(rest), list(transcoders))


def _target_rows(model, run: CachedPass, transcoders, sources: _Sources, active: torch.Tensor,
                 logit_vectors: torch.Tensor, batch: int) -> torch.Tensor:
    """[n + k, N - k] the rows of the feature targets (active [n, 3]) then the logit targets (logit_vectors [k, D],
    read at the last position): the frozen pass's backward (one forward, the backward batched over targets)
    contracted with every source's vector."""
    L, T, D = run.mlp_in.shape
    tokens = model.embed.weight[run.tokens].detach()  # [T, D]
    layers, positions, features = active.unbind(1)
    encoders = _rows(transcoders, "W_enc", layers, features)  # [n, D]
    decoders = _by_place(_rows(transcoders, "W_dec", layers, features) * sources.acts_of(active)[:, None],
                         layers * T + positions, L * T)  # [L*T, R, D]: the scaled decoder rows at each place
    slot, rank = layers * T + positions, _ranks(layers * T + positions)

    n, k = len(active), len(logit_vectors)
    rows = torch.zeros(n + k, n + L * T + T)
    # targets in layer l read the stream after l blocks' attention: their backward runs through those blocks only
    for layer, (first, last) in enumerate(_spans(layers, L, n + k)):
        backward = _batched_backward(model, run, transcoders, tokens, sources.ffn_rest, layer)
        for start in range(first, last, batch):
            stop = min(start + batch, last)
            B = stop - start
            at = torch.zeros(B, T, D)  # what each target reads, where
            if layer < L:
                at[torch.arange(B), positions[start:stop]] = encoders[start:stop]
            else:
                at[:, T - 1] = logit_vectors[start - n:stop - n]
            grad_tok, grad_rest = backward(at)  # [B, T, D], [B, L, T, D]
            per_place = torch.bmm(grad_rest.reshape(B, L * T, D).transpose(0, 1), decoders.transpose(1, 2))
            rows[start:stop] = torch.cat([per_place[slot, :, rank].T,  # features ([LT, B, R] picked)
                                          (grad_rest * sources.errors).sum(-1).reshape(B, L * T),  # errors
                                          (grad_tok * tokens).sum(-1)], dim=1)  # tokens
    return rows


def _spans(layers: torch.Tensor, n_layers: int, n_rows: int) -> list[tuple[int, int]]:
    """[(first, last)] row ranges of each layer's feature targets (layers sorted), then of the logits (the rest)."""
    bounds = torch.searchsorted(layers.contiguous(), torch.arange(n_layers + 1)).tolist()
    return [(bounds[i], bounds[i + 1]) for i in range(n_layers)] + [(len(layers), n_rows)]


def _batched_backward(model, run: CachedPass, transcoders, tokens: torch.Tensor, ffn_rest: torch.Tensor, layer: int):
    """cotangents [B, T, D] at layer's FFN input (or the final norm's output when layer = L) -> the gradients at the
    token embeddings [B, T, D] and the FFN outputs [B, L, T, D]: the frozen pass's transpose, batched."""
    L = len(transcoders)

    def stream(tok, rest):
        mlp_in, final = frozen_forward(model, run, transcoders, tok[None], rest[None], layers=min(layer + 1, L))
        return (final if layer == L else mlp_in[layer])[0]

    _, backward = torch.func.vjp(stream, tokens, ffn_rest)
    return torch.func.vmap(lambda at: backward(at))


def _ranks(slots: torch.Tensor) -> torch.Tensor:
    """[n] each entry's rank among the equal entries before it (slots sorted)."""
    first = torch.searchsorted(slots, slots)
    return torch.arange(len(slots)) - first


def _by_place(vectors: torch.Tensor, slots: torch.Tensor, n_slots: int) -> torch.Tensor:
    """vectors [n, D] at sorted slots [n] -> [n_slots, R, D] zero-padded (R the most vectors at one slot)."""
    ranks = _ranks(slots)
    out = torch.zeros(n_slots, int(ranks.max()) + 1 if len(ranks) else 1, vectors.shape[-1])
    out[slots, ranks] = vectors
    return out


def _rows(transcoders, name: str, layers: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """[n, D]: row features[i] of layer layers[i]'s W_enc or W_dec."""
    out = torch.zeros(len(layers), transcoders[0].cfg.d_model)
    for layer, tc in enumerate(transcoders):
        chosen = layers == layer
        out[chosen] = getattr(tc, name).detach()[features[chosen]]
    return out


def attribution_graph(model, transcoders, tokens, max_logits: int = MAX_LOGITS, logit_mass: float = LOGIT_MASS,
                      batch: int = BATCH) -> AttributionGraph:
    """The graph of tokens [T] (a list or 1-D tensor of ids, position 0 a start token) on model with its transcoders
    (one per layer)."""
    tokens = torch.as_tensor(tokens, dtype=torch.long).flatten()
    with torch.no_grad():
        run = cached_pass(model, tokens)
        sources = sources_of(run, transcoders)
    L, T = run.mlp_in.shape[:2]
    active = torch.cat([torch.stack([torch.full_like(p, layer), p, f], 1)
                        for layer, (p, f) in enumerate(a.nonzero(as_tuple=True) for a in sources.acts)])
    logit_ids, probs = logit_targets(run.logits[-1], max_logits, logit_mass)
    vectors = demeaned_unembedding(model, logit_ids).detach()
    with torch.no_grad():  # torch.func's vjp differentiates its own inputs only
        rows = _target_rows(model, run, transcoders, sources, active, vectors, batch)
    n, k = len(active), len(logit_ids)
    N = n + L * T + T + k
    adjacency = torch.zeros(N, N)
    adjacency[:n, :N - k] = rows[:n]
    adjacency[N - k:, :N - k] = rows[n:]
    values = torch.zeros(N)
    with torch.no_grad():
        layers, positions, features = active.unbind(1)
        biases = torch.stack([tc.b_enc for tc in transcoders])[layers, features]  # [n]
        values[:n] = (run.mlp_in[layers, positions] * _rows(transcoders, "W_enc", layers, features)).sum(-1) + biases
        last = run.logits[-1].float()
        values[N - k:] = last[logit_ids] - last.mean()
        activations = sources.acts_of(active)
    return AttributionGraph(tokens, active, activations.detach(), logit_ids, probs.detach(), adjacency,
                            values, L)
