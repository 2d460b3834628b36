"""`python -m model_core.features graph`: a prompt's attribution graph on a checkpoint with its transcoders, written
as a safetensors file (the dense graph, its pruning and scores; circuit-tracer's node order) and circuit-tracer's
graph JSON beside it (FILE.json). With --double L,P,F it also writes the pre-activations and logits before and after
doubling that feature's activation with everything else frozen (model_core.analysis.graph_interventions)."""
import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from model_core.analysis.attribution_graph import attribution_graph
from model_core.analysis.graph_interventions import direct_effects
from model_core.analysis.graph_json import circuit_tracer_json
from model_core.analysis.graph_pruning import graph_scores, prune_graph
from model_core.analysis.replacement import cached_pass
from model_core.checkpoints.checkpoint import load_checkpoint
from model_core.features.transcoder_format import load_transcoders

START = "\n"  # the start token put first (circuit-tracer zeroes position 0, where it expects a BOS token)
MAX_PROMPT_TOKENS = 64


def graph_tokens(tokenizer, prompt: str, block_size: int) -> list[int]:
    """The prompt's token ids, a newline first unless it starts with one; ValueError when it cannot be a graph."""
    ids = tokenizer.encode(prompt if prompt.startswith(START) else START + prompt)
    if len(ids) < 2:
        raise ValueError("the prompt is empty: type the text whose next token the graph should explain.")
    limit = min(block_size, MAX_PROMPT_TOKENS)
    if len(ids) > limit:
        raise ValueError(f"the prompt is {len(ids)} tokens with its start token; a graph reads at most {limit}.")
    return ids


def _double(spec: str) -> tuple[int, int, int]:
    try:
        layer, pos, feature = (int(part) for part in spec.split(","))
    except ValueError:
        raise ValueError(f"--double takes LAYER,POS,FEATURE (three whole numbers), got {spec!r}.") from None
    return layer, pos, feature


def write_graph_files(args) -> dict:
    ckpt = load_checkpoint(Path(args.checkpoint))
    model = ckpt.model.eval()
    transcoders, config = load_transcoders(args.transcoders)
    tokens = graph_tokens(ckpt.tokenizer, args.prompt, model.cfg.block_size)
    graph = attribution_graph(model, transcoders, tokens)
    pruned = prune_graph(graph, args.node_threshold, args.edge_threshold)
    replacement, completeness = graph_scores(graph)
    tensors = {"adjacency": graph.adjacency, "active_features": graph.active_features,
               "activation_values": graph.activations, "input_tokens": graph.tokens, "logit_tokens": graph.logit_tokens,
               "logit_probabilities": graph.logit_probabilities, "values": graph.values,
               "node_mask": pruned.node_mask.to(torch.uint8), "edge_mask": pruned.edge_mask.to(torch.uint8),
               "cumulative_scores": pruned.cumulative_scores}
    if args.double:
        layer, pos, feature = _double(args.double)
        with torch.no_grad():
            value = float(transcoders[layer].encode(cached_pass(model, torch.tensor(tokens)).mlp_in[layer])[pos, feature])
        before = direct_effects(model, transcoders, tokens, [])
        after = direct_effects(model, transcoders, tokens, [(layer, pos, feature, 2 * value)])
        tensors.update(pre_activations_before=before[0], logits_before=before[1], pre_activations_after=after[0],
                       logits_after=after[1], doubled=torch.tensor([layer, pos, feature]))
    out = Path(args.out)
    summary = {"replacement_score": replacement, "completeness_score": completeness,
               "node_threshold": args.node_threshold, "edge_threshold": args.edge_threshold}
    save_file({name: t.contiguous() for name, t in tensors.items()}, str(out),
              metadata={name: repr(value) for name, value in summary.items()})
    scan = str(config.get("scan", "transcoders"))
    graph_json = circuit_tracer_json(graph, pruned, lambda t: ckpt.tokenizer.decode([t]), out.stem, scan,
                                     args.node_threshold)
    out.with_suffix(".json").write_text(json.dumps(graph_json))
    return {**summary, "nodes": graph.n_nodes, "features": graph.n_features,
            "kept_nodes": int(pruned.node_mask.sum()), "kept_edges": int(pruned.edge_mask.sum())}

