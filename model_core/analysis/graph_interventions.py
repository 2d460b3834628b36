"""Setting a transcoder feature's activation on a prompt, and what follows, three ways:

- `direct_effects`: everything frozen but the edited features (attention patterns, norm denominators, every other
  feature and error): each later feature's pre-activation and each logit move by exactly the graph's edges from
  the edited node, scaled by the change (circuit-tracer's constrained intervention; the check of a graph).
- `intervene(...).predicted`: as the graph predicts it: attention and norms still frozen, but the active features
  of later layers respond linearly (their pre-activations move, they stay active), so effects run along paths.
- `intervene(...).real`: the real model, the edited features' decoder rows added to their FFNs' outputs (so with
  the transcoders spliced in and their errors kept), attention and everything after recomputed.
An edit is (layer, position, feature, new activation)."""
from dataclasses import dataclass
from typing import Sequence

import torch

from model_core.analysis.attribution_graph import sources_of
from model_core.analysis.replacement import cached_pass, frozen_attention, frozen_norm, hook_names

Edit = tuple[int, int, int, float]


@dataclass
class Intervention:
    original: torch.Tensor  # [V] the last position's logits
    predicted: torch.Tensor  # [V] as the graph predicts (frozen attention and norms, features respond linearly)
    real: torch.Tensor  # [V] the real model with the edit


def _by_layer(edits: Sequence[Edit], n_layers: int) -> list[list[tuple[int, int, float]]]:
    out = [[] for _ in range(n_layers)]
    for layer, pos, feature, value in edits:
        out[int(layer)].append((int(pos), int(feature), float(value)))
    return out


@torch.no_grad()
def _frozen_pass(model, transcoders, tokens: torch.Tensor, edits: Sequence[Edit], respond: bool):
    """The frozen replacement model with edits: -> (pre-activations [L, T, d_tc], logits [T, V])."""
    run = cached_pass(model, tokens)
    sources = sources_of(run, transcoders)
    x = model.embed.weight[tokens] + run.position  # [T, D]
    pre_all = []
    for i, (block, tc) in enumerate(zip(model.blocks, transcoders)):
        s1, s2 = run.scales[i]
        x = x + frozen_attention(block.attn, frozen_norm(block.ln1, x, s1)[None], run.patterns[i])[0]
        m = frozen_norm(block.ln2, x, s2)  # [T, D]
        pre = tc.pre_activations(m)
        pre_all.append(pre)
        acts = sources.acts[i]
        new = acts + (acts != 0) * (pre - tc.pre_activations(run.mlp_in[i])) if respond else acts.clone()
        for pos, feature, value in _by_layer(edits, len(transcoders))[i]:
            new[pos, feature] = value
        x = x + sources.ffn_rest[i] + (new - acts) @ tc.W_dec + tc.skip(m)
    return torch.stack(pre_all), model.unembed(frozen_norm(model.ln_final, x, run.final_scale))


def direct_effects(model, transcoders, tokens, edits: Sequence[Edit]):
    """(pre-activations [L, T, d_tc], logits [T, V]) with only the edited features changed."""
    return _frozen_pass(model, transcoders, torch.as_tensor(tokens).flatten(), edits, respond=False)


@torch.no_grad()
def real_logits(model, transcoders, tokens: torch.Tensor, edits: Sequence[Edit]) -> torch.Tensor:
    """[T, V]: the real model, each edited feature's activation (as its transcoder reads the FFN's input in this
    pass) replaced by the new value through its decoder row."""
    per_layer, inputs, hooks = _by_layer(edits, len(transcoders)), {}, []
    for layer, tc in enumerate(transcoders):
        if not per_layer[layer]:
            continue
        x_name, y_name = hook_names(layer)

        def keep(x, hook):
            inputs[hook.name] = x
            return x

        def add(y, hook, tc=tc, x_name=x_name, layer=layer):
            acts = tc.encode(inputs[x_name][0].float())  # [T, d_tc]
            delta = torch.zeros_like(y[0])
            for pos, feature, value in per_layer[layer]:
                delta[pos] += (value - acts[pos, feature]) * tc.W_dec[feature]
            return y + delta

        hooks += [(x_name, keep), (y_name, add)]
    return model.run_with_hooks(tokens[None], fwd_hooks=hooks)[0][0]


def intervene(model, transcoders, tokens, edits: Sequence[Edit]) -> Intervention:
    tokens = torch.as_tensor(tokens, dtype=torch.long).flatten()
    with torch.no_grad():
        original = model(tokens[None])[0][0, -1]
    _, predicted = _frozen_pass(model, transcoders, tokens, edits, respond=True)
    return Intervention(original, predicted[-1], real_logits(model, transcoders, tokens, edits)[-1])
