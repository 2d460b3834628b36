"""Read a decoder-only module the explorer did not build from its own forward pass, without the learner renaming
anything: its blocks (the shallowest submodules that map the [1, T, d_model] stream to itself with attention
inside), every head's pattern, the residual stream after each block, each block's attention and FFN updates
when they add up, the final norm and unembedding when they reproduce the logits, and its embeddings.

A Layout is found once from one prompt (read_layout) and names submodules; activations() then reads any prompt
by those names, under TransformerLens's hook names."""
from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import nn

from model_core.foreign.tracing import CONTAINERS, Pass, watched_pass

PROBE_LENGTHS = (8, 4, 2)  # tokens of the prompt the layout is found from (shorter when the module refuses 8)
LONGEST_TRIED = 1024  # a module that says nothing of its context is tried on prompts up to this long


class ReadError(ValueError):
    """The module cannot be read as a decoder-only transformer; the message says why in one sentence."""


@dataclass
class Layout:
    """Where a module keeps what the explorer draws (submodule names from named_modules())."""

    kind: str  # the module's class name
    blocks: list  # one name per layer, in order
    n_heads: int
    d_model: int
    vocab_size: int
    block_size: Optional[int]  # the longest context it reads (None: not found)
    attn: list = field(default_factory=list)  # per layer, the submodule whose output is attention's update, or None
    mlp: list = field(default_factory=list)  # per layer, the FFN's, or None (both found only when they add up)
    final: list = field(default_factory=list)  # the modules between the last block and the unembedding (its norm)
    head: Optional[str] = None  # the unembedding, when head(final(stream)) gives the logits
    embed: Optional[str] = None  # the token embedding (an nn.Embedding called with the ids)
    pos_embed: Optional[str] = None  # the position embedding (an nn.Embedding called with 0..T-1)
    missing: dict = field(default_factory=dict)  # what was not found -> the sentence a view shows
    unbatched: bool = False  # its forward reads one sequence [T], not a batch [B, T]
    residual_outside: bool = False  # its "blocks" return only their update; the caller adds it to the stream

    @property
    def n_layers(self) -> int:
        return len(self.blocks)

    @property
    def has_updates(self) -> bool:
        return all(a is not None for a in self.attn) and all(m is not None for m in self.mlp)


def logits_of(output) -> Optional[torch.Tensor]:
    """A forward's logits: the tensor itself, `.logits` (Hugging Face), or the first tensor of a tuple ((logits,
    loss), as nanoGPT-style code returns)."""
    if isinstance(output, torch.Tensor):
        return output
    if hasattr(output, "logits") and isinstance(output.logits, torch.Tensor):
        return output.logits
    if isinstance(output, (tuple, list)):
        return next((o for o in output if isinstance(o, torch.Tensor) and o.is_floating_point()), None)
    return None


def stream_shaped(t, T: int, d: Optional[int] = None) -> bool:
    """A [1, T, d] float tensor (the residual stream's shape)."""
    return (isinstance(t, torch.Tensor) and t.is_floating_point() and t.dim() == 3 and t.shape[:2] == (1, T)
            and (d is None or t.shape[2] == d))


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float32 rounding at these magnitudes."""
    scale = max(1.0, float(b.abs().max()))
    return a.shape == b.shape and bool(torch.allclose(a.float(), b.float(), rtol=1e-4, atol=1e-5 * scale))


def layout_for(module: nn.Module, vocab_size: int) -> Layout:
    """The Layout of module, found from a fixed prompt of token ids below vocab_size (8 tokens, fewer if the
    module refuses 8); its context length tried out when nothing in the module says it."""
    error = None
    for T in PROBE_LENGTHS:
        ids = torch.randint(0, vocab_size, (1, T), generator=torch.Generator().manual_seed(0))
        try:
            layout = read_layout(module, ids)
            break
        except ReadError as err:
            error = error or err
    else:
        raise error
    if layout.block_size is None:
        layout.block_size = longest_context(module, layout, T)
    return layout


def longest_context(module: nn.Module, layout: Layout, works: int) -> int:
    """The longest prompt (at most LONGEST_TRIED tokens) the module runs on, knowing it runs on `works` tokens."""
    fails = LONGEST_TRIED + 1
    while fails - works > 1:
        T = min(works * 2, (works + fails) // 2) if fails > LONGEST_TRIED else (works + fails) // 2
        try:
            with torch.no_grad():
                module(torch.zeros(T, dtype=torch.long) if layout.unbatched else torch.zeros(1, T, dtype=torch.long))
            works = T
        except Exception:  # noqa: BLE001 - any refusal means the prompt is too long
            fails = T
    return works


def read_layout(module: nn.Module, ids: torch.Tensor) -> Layout:
    """The Layout of module, found from one pass over ids ([1, T], T >= 2); ReadError, saying why, if it is not a
    decoder-only transformer this can read. A module that refuses a batch is read one sequence at a time."""
    try:
        return layout_of(module, ids, watched(module, ids, False), False)
    except ReadError as batched_error:
        try:
            return layout_of(module, ids, watched(module, ids, True), True)
        except ReadError:
            raise batched_error from None


def watched(module: nn.Module, ids: torch.Tensor, unbatched: bool) -> Pass:
    """watched_pass, its failure (the learner's code raising on our prompt) said as a ReadError."""
    try:
        return watched_pass(module, ids, unbatched)
    except Exception as err:  # noqa: BLE001 - any error of the learner's code becomes a sentence
        first = str(err).strip().splitlines()[0][:200] if str(err).strip() else "no message"
        raise ReadError(f"{type(module).__name__}'s forward failed on a prompt of {ids.shape[-1]} tokens "
                        f"(given as a [1, {ids.shape[-1]}] tensor of token ids): {type(err).__name__}: {first}") from None


def layout_of(module: nn.Module, ids: torch.Tensor, run: Pass, unbatched: bool) -> Layout:
    kind = type(module).__name__
    T = ids.shape[-1]
    logits = logits_of(run.output)
    if logits is None or not logits.is_floating_point() or logits.dim() not in (2, 3):
        raise ReadError(f"{kind}'s forward did not return logits (a [batch, T, vocab] tensor, a tuple starting with "
                        "one, or an object with .logits).")
    if not run.attention:
        raise ReadError(f"found no attention in {kind}'s forward pass: the explorer looks for a softmax over causally "
                        "masked [T, T] scores or torch's scaled_dot_product_attention (is_causal=True or a causal "
                        "mask), and found neither.")
    blocks = block_calls(run, T)
    if not blocks:
        raise ReadError(f"{kind} has attention but no blocks: the explorer looks for the submodules that take and "
                        "return the [batch, T, d_model] stream with attention inside, and found none.")
    heads = [sum(a.pattern.shape[1] for a in heads_of(run, b.name)) for b in blocks]
    if len(set(heads)) != 1:
        raise ReadError(f"{kind}'s layers have different numbers of attention heads ({heads}); the explorer draws "
                        "models whose layers all have the same number.")
    layout = Layout(kind, [b.name for b in blocks], heads[0], blocks[0].output.shape[-1], logits.shape[-1],
                    context_length(module, run, ids), unbatched=unbatched)
    layout.residual_outside = len(blocks) > 1 and not close(blocks[1].input, blocks[0].output) and close(
        blocks[1].input, blocks[0].input + blocks[0].output)
    find_unembedding(module, run, layout, blocks[-1], logits)
    for b in blocks:
        attn, mlp = (b.name, None) if layout.residual_outside else updates(run, b)
        layout.attn.append(attn)
        layout.mlp.append(mlp)
    if not layout.has_updates:
        layout.missing["updates"] = (f"the attention and FFN updates of {kind}'s blocks: the explorer could not find "
                                     "two parts of each block whose outputs add to the stream (x + attn + ffn)")
    layout.embed, layout.pos_embed = embedding_names(run, ids)
    calls = {c.name: c for c in run.calls}
    if layout.embed and not layout.pos_embed and not close(blocks[0].input, calls[layout.embed].output):
        layout.missing["positions"] = (f"{kind}'s position vectors: something other than an nn.Embedding adds them "
                                       "to the token embeddings")
    return layout


def block_calls(run: Pass, T: int) -> list:
    """The blocks: submodules (not lists) called once that take and return the stream and hold attention, at the
    shallowest depth such submodules are found, in the order they ran."""
    counts = {}
    for c in run.calls:
        counts[c.name] = counts.get(c.name, 0) + 1
    found = [c for c in run.calls if counts[c.name] == 1 and not isinstance(c.module, CONTAINERS)
             and stream_shaped(c.input, T) and stream_shaped(c.output, T, c.input.shape[-1]) and heads_of(run, c.name)]
    if not found:
        return []
    top = min(c.depth for c in found)
    return [c for c in found if c.depth == top]


def heads_of(run: Pass, name: str) -> list:
    """The attention computed inside the named submodule."""
    return [a for a in run.attention if name in a.within]


def inside(run: Pass, block) -> list:
    """The calls made while the block ran, not lists."""
    return [c for c in run.calls if c.name.startswith(block.name + ".") and not isinstance(c.module, CONTAINERS)]


def updates(run: Pass, block) -> tuple:
    """(attention submodule, FFN submodule) of a block whose outputs add to the stream: input + attn + ffn =
    output; (None, None) when no such pair is found (a post-norm block, parts the code does not make modules)."""
    T, d = block.input.shape[1], block.input.shape[2]
    mine = heads_of(run, block.name)
    attn = [c for c in inside(run, block) if stream_shaped(c.output, T, d) and all(c.name in a.within for a in mine)]
    if not attn:
        return None, None
    a = min(attn, key=lambda c: c.depth)
    after = [c for c in inside(run, block) if c.start > a.end and stream_shaped(c.output, T, d)
             and not heads_of(run, c.name)]
    for m in sorted(after, key=lambda c: (c.depth, c.start)):
        if close(block.input + a.output + m.output, block.output):
            return a.name, m.name
    return None, None


def find_unembedding(module: nn.Module, run: Pass, layout: Layout, last_block, logits: torch.Tensor) -> None:
    """Set layout.head and layout.final when head(final(last stream)) reproduces the logits (a one-layer model
    whose residual is added outside its attention module is recognised here: layout.residual_outside); else say
    what the logit lens cannot find."""
    after = [c for c in run.calls if c.start > last_block.end and not isinstance(c.module, CONTAINERS)]
    heads = [c for c in after if c.output is not None and c.output.shape[-1] == layout.vocab_size
             and c.input is not None and c.input.shape[-1] == layout.d_model]
    if heads:
        head = heads[-1]
        final = [c.name for c in after if c.end < head.start and not list(c.module.children())
                 and stream_shaped(c.input, c.input.shape[1], layout.d_model)
                 and stream_shaped(c.output, c.output.shape[1], layout.d_model)]
        got = logits if logits.dim() == 3 else logits[None]
        outside = [layout.residual_outside] if layout.n_layers > 1 else [False, True]
        for layout.residual_outside in outside:
            layout.head, layout.final = head.name, final
            guess = unembedded(module, layout, stream_after(layout, last_block.input, last_block.output))
            if close(guess[:, -got.shape[1]:], got):
                return
    layout.head, layout.final, layout.residual_outside = None, [], layout.residual_outside and layout.n_layers > 1
    layout.missing["lens"] = (f"{layout.kind}'s final norm and unembedding: no module after the last block turns "
                              "its stream into these logits")


def stream_after(layout: Layout, block_input: torch.Tensor, block_output: torch.Tensor) -> torch.Tensor:
    """The residual stream after a block: its output, or input + output when the caller adds the residual."""
    return block_input + block_output if layout.residual_outside else block_output


def embedding_names(run: Pass, ids: torch.Tensor) -> tuple:
    """(token embedding, position embedding) submodule names: nn.Embeddings called with the ids and with 0..T-1."""
    token = position = None
    positions = torch.arange(ids.shape[-1])
    for c in run.calls:
        if isinstance(c.module, nn.Embedding) and c.input is not None:
            if token is None and c.input.shape[-1] == ids.shape[-1] and torch.equal(c.input.reshape(-1).cpu(),
                                                                                   ids.reshape(-1).cpu()):
                token = c.name
            elif position is None and torch.equal(c.input.reshape(-1).cpu(), positions):
                position = c.name
    return token, position


def context_length(module: nn.Module, run: Pass, ids: torch.Tensor) -> Optional[int]:
    """The longest context: the position table's rows, else the largest square causal mask buffer, else a
    block_size-like attribute of the module or its config; None when none says."""
    _, position = embedding_names(run, ids)
    if position is not None:
        return dict(module.named_modules())[position].num_embeddings
    squares = [b.shape[-1] for b in module.buffers() if b.dim() >= 2 and b.shape[-1] == b.shape[-2]]
    if squares:
        return max(squares)
    for owner in (module, getattr(module, "config", None), getattr(module, "cfg", None)):
        for attr in ("block_size", "context_length", "max_seq_len", "n_positions", "n_ctx", "seq_len"):
            value = getattr(owner, attr, None) if owner is not None else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def activations(module: nn.Module, layout: Layout, ids: torch.Tensor) -> tuple:
    """(logits [1, T, V], {TransformerLens hook name: tensor}) of one pass over ids [1, T], read by layout's names:
    blocks.{L}.hook_resid_pre / hook_resid_post [1, T, D], attn.hook_pattern [1, H, T, T], attn.hook_attn_scores and
    hook_attn_scores_unmasked [1, H, T, T] and attn.hook_z [1, T, H, d_head] when the code shows them,
    hook_attn_out / hook_mlp_out / hook_resid_mid when the updates were found; hook_embed / hook_pos_embed."""
    T = ids.shape[-1]
    run = watched(module, ids, layout.unbatched)
    calls = {c.name: c for c in run.calls}
    missing = [name for name in layout.blocks if name not in calls]
    if missing:
        raise ReadError(f"{layout.kind} did not run its block {missing[0]} on this prompt.")
    store = {}
    for L, name in enumerate(layout.blocks):
        block = calls[name]
        store[f"blocks.{L}.hook_resid_pre"] = block.input
        store[f"blocks.{L}.hook_resid_post"] = stream_after(layout, block.input, block.output)
        store.update(attention_of(run, name, L))
        if layout.has_updates:
            attn, mlp = calls[layout.attn[L]].output, calls[layout.mlp[L]].output
            store[f"blocks.{L}.hook_attn_out"], store[f"blocks.{L}.hook_mlp_out"] = attn, mlp
            store[f"blocks.{L}.hook_resid_mid"] = block.input + attn
    for hook, name in (("hook_embed", layout.embed), ("hook_pos_embed", layout.pos_embed)):
        if name in calls and calls[name].output is not None:
            store[hook] = calls[name].output.reshape(1, -1, layout.d_model)[:, -T:]
    return full_logits(module, layout, store, logits_of(run.output)), store


def attention_of(run: Pass, block: str, L: int) -> dict:
    """One block's attention hook points (heads of per-head modules stacked in the order they ran)."""
    parts = heads_of(run, block)
    out = {f"blocks.{L}.attn.hook_pattern": torch.cat([a.pattern for a in parts], dim=1)}
    for hook, attr in (("hook_attn_scores", "scores"), ("hook_attn_scores_unmasked", "unmasked")):
        if all(getattr(a, attr) is not None for a in parts):
            out[f"blocks.{L}.attn.{hook}"] = torch.cat([getattr(a, attr) for a in parts], dim=1)
    if all(a.z is not None for a in parts):
        out[f"blocks.{L}.attn.hook_z"] = torch.cat([a.z for a in parts], dim=1).transpose(1, 2)  # [1, T, H, dh]
    return out


def full_logits(module: nn.Module, layout: Layout, store: dict, logits: torch.Tensor) -> torch.Tensor:
    """[1, T, V]: the module's own logits, or (nanoGPT-style code returns only the last position's) the
    unembedding of every position's stream, whose last position is the module's own."""
    logits = logits if logits.dim() == 3 else logits[None]
    T = store["blocks.0.hook_resid_pre"].shape[1]
    if logits.shape[1] == T or layout.head is None:
        return logits.detach().float()
    return unembedded(module, layout, store[f"blocks.{layout.n_layers - 1}.hook_resid_post"]).float()


@torch.no_grad()
def unembedded(module: nn.Module, layout: Layout, x: torch.Tensor) -> torch.Tensor:
    """head(final(x)): streams [1, N, D] read as the last layer's -> logits [1, N, V] (layout.head must be set)."""
    modules = dict(module.named_modules())
    x = x[0] if layout.unbatched else x
    for name in layout.final:
        x = modules[name](x)
    x = modules[layout.head](x)
    return x[None] if layout.unbatched else x
