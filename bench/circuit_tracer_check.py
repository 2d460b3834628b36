"""Our attribution graphs against circuit-tracer's own, on the same model, transcoders and prompt.

    python -m bench.circuit_tracer_check --checkpoint explorer/assets/models/shakespeare \\
        --transcoders explorer/assets/transcoders/shakespeare --prompt $'\\nROMEO:'

Runs in a venv of its own (`make bench-circuit-tracer`: circuit-tracer needs transformers<=4.57.3, the app has 5),
and imports neither explorer nor model_core: it reads the checkpoint and transcoder files, builds circuit-tracer's
TransformerLens ReplacementModel on them, and runs our side (`python -m model_core.features graph`, and our model's
logits) in a subprocess of the app's interpreter (--our-python). Compared: the model's logits, the active features
and their activations, every adjacency entry, the logit targets and probabilities, the pruned nodes, the replacement
and completeness scores, and, on both sides, that doubling one feature's activation (attention patterns, norm
denominators and MLP outputs frozen) moves every feature's pre-activation and every demeaned target logit by that
feature's adjacency column (circuit-tracer's tests/test_attributions_*.py check the same). Prints one JSON line;
exit status 1 when an item fails.

--random-transcoders DIR writes random TopK transcoders for the checkpoint in circuit-tracer's format to DIR first
(and checks them): the check without trained ones. --theirs-only: the logits, circuit-tracer's graph and its own
doubling, without our graph command."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local: a hub look-up would be a bug
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import yaml  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- circuit-tracer's side

def our_config(checkpoint: Path) -> dict:
    """config.json of a checkpoint folder: model_config, tokenizer.chars."""
    return json.loads((checkpoint / "config.json").read_text())


def hooked_config(mc: dict):
    """TransformerLens's config of our GPT: pre-LayerNorm (weight and bias), learned positions, exact-erf GELU
    (TL's "gelu"), biases everywhere, unembedding tied to the embedding (copied into W_U)."""
    from transformer_lens import HookedTransformerConfig

    supported = {"norm": "layernorm", "norm_placement": "pre", "positional": "learned", "activation": "gelu",
                 "tie_weights": True, "bias": True, "attn_only": False}
    allowed = {"n_kv_heads": (None, mc["n_heads"]), "qk_norm": (None, False), "parallel_blocks": (None, False),
               "qkv_bias": (None, True)}
    wrong = {k: mc.get(k) for k, v in supported.items() if mc.get(k, v) != v}
    wrong.update({k: mc[k] for k, ok in allowed.items() if mc.get(k) not in ok})
    if wrong:
        raise SystemExit(f"this check covers GPT-2-like models only; the checkpoint has {wrong}")
    return HookedTransformerConfig(
        n_layers=mc["n_layers"], d_model=mc["d_model"], n_ctx=mc["block_size"], n_heads=mc["n_heads"],
        d_head=mc["d_model"] // mc["n_heads"], d_mlp=mc.get("d_mlp") or 4 * mc["d_model"],
        d_vocab=mc["vocab_size"], act_fn="gelu", normalization_type="LN", eps=mc.get("norm_eps", 1e-5),
        positional_embedding_type="standard", model_name="transformer-explorer", default_prepend_bos=False,
        device="cpu", dtype=torch.float32)


def tl_weights(ours: dict, mc: dict) -> dict:
    """Our model.safetensors tensors under TransformerLens's names and shapes. W_qkv's rows are all query heads, then
    all key heads, then all value heads, d_head rows each; W_o's columns are (head, d_head)."""
    H, D = mc["n_heads"], mc["d_model"]
    dh = D // H
    tl = {"embed.W_E": ours["embed.weight"], "pos_embed.W_pos": ours["pos_embed.weight"],
          "unembed.W_U": ours["embed.weight"].T.contiguous(),
          "unembed.b_U": ours.get("unembed.bias", torch.zeros(mc["vocab_size"])),
          "ln_final.w": ours["ln_final.norm.weight"], "ln_final.b": ours["ln_final.norm.bias"]}
    for L in range(mc["n_layers"]):
        b = f"blocks.{L}."  # the same prefix in both
        for i, name in enumerate("QKV"):
            rows = ours[b + "attn.W_qkv.weight"][i * D:(i + 1) * D]  # (H*dh, D)
            tl[b + f"attn.W_{name}"] = rows.view(H, dh, D).transpose(1, 2).contiguous()  # (H, D, dh)
            tl[b + f"attn.b_{name}"] = ours[b + "attn.W_qkv.bias"][i * D:(i + 1) * D].view(H, dh)
        tl[b + "attn.W_O"] = ours[b + "attn.W_o.weight"].T.contiguous().view(H, dh, D)
        tl[b + "attn.b_O"] = ours[b + "attn.W_o.bias"]
        for n in (1, 2):
            tl[b + f"ln{n}.w"], tl[b + f"ln{n}.b"] = ours[b + f"ln{n}.norm.weight"], ours[b + f"ln{n}.norm.bias"]
        for name in ("in", "out"):
            tl[b + f"mlp.W_{name}"] = ours[b + f"mlp.W_{name}.weight"].T.contiguous()
            tl[b + f"mlp.b_{name}"] = ours[b + f"mlp.W_{name}.bias"]
    return tl


def char_tokenizer(chars: list[str]):
    """Our char tokenizer as a transformers fast tokenizer: one token per character, id = index in chars. "\\n"
    (id 0, which our prompts start with) is the BOS, EOS and PAD token, so circuit-tracer's ensure_tokenized keeps
    the tokens as they are (its own fallback, next(filter(None, ...)), would skip id 0). add_bos_token=True only
    stops TransformerLens's set_tokenizer from reloading the tokenizer by name (a hub look-up)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({c: i for i, c in enumerate(chars)}, unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=chars[0], eos_token=chars[0], pad_token=chars[0],
                                   add_bos_token=True, clean_up_tokenization_spaces=False, name_or_path="chars")


def transcoder_set(folder: Path):
    """circuit-tracer's TranscoderSet from the folder's config.yaml and layer files, loaded by circuit-tracer's
    load_transcoder_set (paths made absolute: 0.5.0 reads them relative to the working directory). 0.5.0's loader
    ignores config.yaml's activation and k (it gives every layer ReLU), so each layer's activation_function is set
    to circuit-tracer's own TopK(k) here, as its later releases do."""
    from circuit_tracer.transcoder import load_transcoder_set
    from circuit_tracer.transcoder.activation_functions import TopK

    cfg = yaml.safe_load((folder / "config.yaml").read_text())
    if cfg.get("model_kind") != "transcoder_set" or cfg.get("activation") != "topk":
        raise SystemExit(f"{folder}/config.yaml: expected a TopK transcoder_set, got {cfg}")
    paths = {i: str((folder / p).resolve()) for i, p in enumerate(cfg["transcoders"])}
    tcs = load_transcoder_set(paths, scan=cfg.get("scan", str(folder)), feature_input_hook=cfg["feature_input_hook"],
                              feature_output_hook=cfg["feature_output_hook"], device=torch.device("cpu"),
                              dtype=torch.float32, lazy_encoder=False, lazy_decoder=False)
    for tc in tcs:
        tc.activation_function = TopK(int(cfg["k"]))
    return tcs, cfg


def replacement_model(checkpoint: Path, transcoders: Path):
    """circuit-tracer's TransformerLensReplacementModel with our weights and transcoders.

    config.yaml names the FFN's input `mlp.hook_in` (the hook circuit-tracer's ReplacementMLP adds: in our model,
    ln2.hook_normalized; TransformerLens's ln2.hook_normalized is x / scale, before the norm's weight and bias)."""
    from circuit_tracer.replacement_model.replacement_model_transformerlens import TransformerLensReplacementModel

    config = our_config(checkpoint)
    mc = config["model_config"]
    tcs, tc_cfg = transcoder_set(transcoders)
    if tc_cfg["feature_input_hook"] != "mlp.hook_in":
        raise SystemExit(f"expected transcoders reading the FFN's input (mlp.hook_in), got {tc_cfg}")
    model = TransformerLensReplacementModel.from_config(hooked_config(mc), tcs,
                                                        tokenizer=char_tokenizer(config["tokenizer"]["chars"]))
    # the replacement model wraps each MLP and the unembedding: blocks.L.mlp.old_mlp.*, unembed.old_unembed.*
    renamed = {k.replace(".mlp.", ".mlp.old_mlp.").replace("unembed.", "unembed.old_unembed."): v
               for k, v in tl_weights(load_file(checkpoint / "model.safetensors"), mc).items()}
    missing, unexpected = model.load_state_dict(renamed, strict=False)
    if unexpected or any(not k.endswith((".mask", ".IGNORE")) and not k.startswith("transcoders.") for k in missing):
        raise SystemExit(f"weights do not fit TransformerLens's model: missing {missing}, unexpected {unexpected}")
    return model.eval()


def their_graph(model, tokens: torch.Tensor, node_threshold: float, edge_threshold: float) -> dict:
    """circuit-tracer's attribute, prune_graph and compute_graph_scores, as plain tensors and floats."""
    from circuit_tracer import attribute
    from circuit_tracer.graph import compute_graph_scores, prune_graph

    g = attribute(tokens, model, max_n_logits=10, desired_logit_prob=0.95, batch_size=256)
    node_mask, edge_mask, cumulative = prune_graph(g, node_threshold, edge_threshold)
    replacement, completeness = compute_graph_scores(g)
    return {"adjacency": g.adjacency_matrix, "active_features": g.active_features,
            "activation_values": g.activation_values, "input_tokens": g.input_tokens,
            "logit_tokens": g.logit_token_ids, "logit_probabilities": g.logit_probabilities,
            "node_mask": node_mask, "edge_mask": edge_mask, "cumulative_scores": cumulative,
            "replacement_score": replacement, "completeness_score": completeness}


def node_to_double(graph: dict) -> tuple[int, int, int, int]:
    """(index, layer, pos, feature) of the active feature before the last position with the largest total |effect|
    on the graph's other nodes (its adjacency column): a feature whose doubling moves much."""
    af, n_pos = graph["active_features"], len(graph["input_tokens"])
    before_last = (af[:, 1] < n_pos - 1).nonzero().flatten()
    weight = graph["adjacency"][:, before_last].abs().sum(0)
    i = int(before_last[weight.argmax()])
    return (i, *map(int, af[i]))


def their_doubling(model, tokens: torch.Tensor, layer: int, pos: int, feature: int) -> dict:
    """Pre-activations [n_layers, T, d_transcoder] and logits [T, V] before and after doubling the feature's
    activation with circuit-tracer's feature_intervention, constrained to all layers (attention patterns, norm
    scales and MLP outputs frozen), as its tests call it."""
    logits, pre = model.get_activations(tokens, apply_activation_function=False)
    _, acts = model.get_activations(tokens)
    value = 2 * acts[layer, pos, feature]
    new_logits, new_pre = model.feature_intervention(tokens, [(layer, pos, feature, value)],
                                                     constrained_layers=range(model.cfg.n_layers),
                                                     apply_activation_function=False)
    return {"pre_activations_before": pre, "pre_activations_after": new_pre,
            "logits_before": logits.squeeze(0), "logits_after": new_logits.squeeze(0)}


# ---------------------------------------------------------------- our side, in the app's interpreter

OUR_LOGITS = """
import json, sys, torch
from model_core.checkpoints.checkpoint import load_checkpoint
model = load_checkpoint(sys.argv[1]).model.eval()
with torch.no_grad():
    print(json.dumps(model(torch.tensor([json.loads(sys.argv[2])]))[0][0].tolist()))
"""


OUR_ROOT = ROOT  # the checkout whose model_core runs (--our-root)


def run_ours(python: str, args: list[str]) -> str:
    """stdout of our interpreter run in our checkout (stderr passes through); SystemExit when it fails."""
    done = subprocess.run([python, *args], cwd=OUR_ROOT, stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(OUR_ROOT)})
    if done.returncode:
        raise SystemExit(f"our side failed ({done.returncode}): {python} {' '.join(args)[:300]}")
    return done.stdout


def our_logits(python: str, checkpoint: Path, tokens: list[int]) -> torch.Tensor:
    """Our model's logits [T, V] on the tokens."""
    out = run_ours(python, ["-c", OUR_LOGITS, str(checkpoint), json.dumps(tokens)])
    return torch.tensor(json.loads(out.strip().splitlines()[-1]))


def our_graph(python: str, checkpoint: Path, transcoders: Path, prompt: str, double: tuple, folder: str,
              node_threshold: float, edge_threshold: float) -> dict:
    """Our CLI's graph file (tensors, and the metadata strings as floats), with the doubling's tensors."""
    out = Path(folder) / "ours.safetensors"
    run_ours(python, ["-m", "model_core.features", "graph", "--checkpoint", str(checkpoint), "--transcoders",
                      str(transcoders), "--prompt", prompt, "--out", str(out), "--node-threshold",
                      str(node_threshold), "--edge-threshold", str(edge_threshold),
                      "--double", ",".join(map(str, double))])
    with safe_open(out, "pt") as f:
        graph = {k: f.get_tensor(k) for k in f.keys()}
        graph.update({k: float(v) for k, v in (f.metadata() or {}).items() if k.endswith(("score", "threshold"))})
    return graph


# ---------------------------------------------------------------- comparing

def difference(ours, theirs, rtol: float, atol: float) -> dict:
    """Largest absolute and relative difference of two tensors, and PASS when |a - b| <= atol + rtol |b|."""
    a, b = torch.as_tensor(ours).double(), torch.as_tensor(theirs).double()
    if a.shape != b.shape:
        return {"result": "FAIL", "shapes": [list(a.shape), list(b.shape)]}
    d = (a - b).abs()
    ok = bool((d <= atol + rtol * b.abs()).all())
    rel = (d / b.abs().clamp(min=1e-30))[d > 0]
    return {"max_abs": float(d.max()) if d.numel() else 0.0, "max_rel": float(rel.max()) if rel.numel() else 0.0,
            "atol": atol, "rtol": rtol, "result": "PASS" if ok else "FAIL"}


def same(ours, theirs, **details) -> dict:
    a, b = torch.as_tensor(ours), torch.as_tensor(theirs)
    ok = a.shape == b.shape and bool((a == b).all())
    return {**details, "result": "PASS" if ok else "FAIL",
            **({} if ok else {"ours": a.tolist()[:50], "theirs": b.tolist()[:50]})}


def scaled(x: torch.Tensor, rtol: float = 1e-3, scale: float = 1e-4) -> dict:
    """rtol and an atol scaled by the tensor's magnitude (float32 sums of terms of that size)."""
    return {"rtol": rtol, "atol": scale * float(x.abs().max())}


def doubling_moves_by_column(run: dict, graph: dict, index: int) -> dict:
    """How far the doubling's change of each active feature's pre-activation and of each demeaned target logit (last
    position) is from the feature's adjacency column: circuit-tracer's tests' tolerances (activations atol 5e-4,
    rtol 1e-5; logits atol 1e-5, rtol 1e-3)."""
    af, targets, n = graph["active_features"].long(), graph["logit_tokens"].long(), len(graph["active_features"])
    column = graph["adjacency"][:, index].double()

    def at_features(pre):
        return pre.double()[af[:, 0], af[:, 1], af[:, 2]]

    def demeaned(logits):
        last = logits.double()[-1]
        return last[targets] - last.mean()

    acts = at_features(run["pre_activations_after"]) - at_features(run["pre_activations_before"])
    logits = demeaned(run["logits_after"]) - demeaned(run["logits_before"])
    return {"activations": difference(acts, column[:n], rtol=1e-5, atol=5e-4),
            "logits": difference(logits, column[-len(targets):], rtol=1e-3, atol=1e-5),
            "largest_moved_activation": float(acts.abs().max()), "largest_moved_logit": float(logits.abs().max())}


def doubling_tensors(graph: dict) -> dict:
    """Our file's doubling tensors under the agreed names, or whichever names hold pre-activations / logits before
    and after."""
    found = {}
    for want in ("pre_activations_before", "pre_activations_after", "logits_before", "logits_after"):
        kind, when = want.rsplit("_", 1)
        names = [k for k in graph if k == want] or [k for k in graph if when in k and kind.split("_")[0] in k]
        if len(names) != 1:
            raise SystemExit(f"our graph file has no single {want} tensor: {sorted(graph)}")
        found[want] = graph[names[0]]
    return found


def compare(ours: dict, theirs: dict, double: tuple, our_run: dict, their_run: dict) -> dict:
    items = {}
    items["input_tokens"] = same(ours["input_tokens"], theirs["input_tokens"])
    items["active_features"] = same(ours["active_features"].long(), theirs["active_features"].long(),
                                    count=[len(ours["active_features"]), len(theirs["active_features"])])
    if items["active_features"]["result"] == "FAIL":
        a = {tuple(r) for r in ours["active_features"].tolist()}
        b = {tuple(r) for r in theirs["active_features"].tolist()}
        items["active_features"].update(only_ours=sorted(a - b)[:20], only_theirs=sorted(b - a)[:20])
        return items  # the node orders differ: nothing below lines up
    items["activation_values"] = difference(ours["activation_values"], theirs["activation_values"],
                                            **scaled(theirs["activation_values"], 1e-4, 1e-5))
    items["logit_tokens"] = same(ours["logit_tokens"].long(), theirs["logit_tokens"].long())
    items["logit_probabilities"] = difference(ours["logit_probabilities"], theirs["logit_probabilities"],
                                              rtol=1e-4, atol=1e-6)
    items["adjacency"] = difference(ours["adjacency"], theirs["adjacency"], **scaled(theirs["adjacency"]))
    items["adjacency"]["max_abs_entry"] = float(theirs["adjacency"].abs().max())
    differ = (ours["node_mask"].bool() != theirs["node_mask"].bool()).nonzero().flatten().tolist()
    items["pruned_nodes"] = {"kept": [int(ours["node_mask"].sum()), int(theirs["node_mask"].sum())],
                             "result": "PASS" if not differ else "FAIL",
                             "differing": [{"node": i, "ours_kept": bool(ours["node_mask"][i]),
                                            "cumulative_ours": float(ours["cumulative_scores"][i]),
                                            "cumulative_theirs": float(theirs["cumulative_scores"][i])}
                                           for i in differ[:20]]}
    items["cumulative_scores"] = difference(ours["cumulative_scores"], theirs["cumulative_scores"],
                                            rtol=1e-4, atol=1e-5)
    edges = (ours["edge_mask"].bool() != theirs["edge_mask"].bool())
    items["pruned_edges"] = {"kept": [int(ours["edge_mask"].sum()), int(theirs["edge_mask"].sum())],
                             "differing": int(edges.sum()), "result": "PASS" if not edges.any() else "FAIL"}
    for score in ("replacement_score", "completeness_score"):
        d = abs(ours[score] - theirs[score])
        items[score] = {"ours": ours[score], "theirs": theirs[score], "abs_diff": d,
                        "result": "PASS" if d < 1e-4 else "FAIL"}
    index = double[0]
    items["doubling_theirs"] = {"node": list(double[1:]), **doubling_moves_by_column(their_run, theirs, index)}
    items["doubling_ours"] = {"node": list(double[1:]), **doubling_moves_by_column(our_run, ours, index)}
    for key in ("pre_activations", "logits"):  # the two doublings' changes, everywhere but the first position
        d_ours = our_run[f"{key}_after"] - our_run[f"{key}_before"]
        d_theirs = their_run[f"{key}_after"] - their_run[f"{key}_before"]
        if key == "pre_activations":
            d_ours, d_theirs = d_ours[:, 1:], d_theirs[:, 1:]
        items[f"doubling_{key}_change_ours_vs_theirs"] = difference(d_ours, d_theirs, **scaled(d_theirs, 1e-3, 1e-4))
    return items


def passed(item: dict) -> bool:
    return all(passed(v) for v in item.values() if isinstance(v, dict)) and item.get("result", "PASS") == "PASS"


# ---------------------------------------------------------------- random transcoders for a dry run

def write_random_transcoders(folder: Path, checkpoint: Path, d_transcoder: int = 512, k: int = 8) -> None:
    """Random TopK transcoders for the checkpoint in circuit-tracer's format (config.yaml, layer_i.safetensors)."""
    mc = our_config(checkpoint)["model_config"]
    D, g = mc["d_model"], torch.Generator().manual_seed(0)
    folder.mkdir(parents=True, exist_ok=True)
    for layer in range(mc["n_layers"]):
        save_file({"W_enc": torch.randn(d_transcoder, D, generator=g) / D ** 0.5,
                   "W_dec": torch.randn(d_transcoder, D, generator=g) / d_transcoder ** 0.5,
                   "b_enc": torch.randn(d_transcoder, generator=g) * 0.1,
                   "b_dec": torch.randn(D, generator=g) * 0.1}, folder / f"layer_{layer}.safetensors")
    (folder / "config.yaml").write_text(yaml.safe_dump({
        "model_kind": "transcoder_set", "feature_input_hook": "mlp.hook_in",
        "feature_output_hook": "mlp.hook_out", "activation": "topk", "k": k, "scan": "random",
        "transcoders": [f"layer_{i}.safetensors" for i in range(mc["n_layers"])]}, sort_keys=False))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.circuit_tracer_check", description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", type=Path, default=Path("explorer/assets/models/shakespeare"))
    p.add_argument("--transcoders", type=Path, default=Path("explorer/assets/transcoders/shakespeare"))
    p.add_argument("--prompt", default="\nROMEO:")
    p.add_argument("--node-threshold", type=float, default=0.8)
    p.add_argument("--edge-threshold", type=float, default=0.98)
    p.add_argument("--our-python", default=str(ROOT / ".venv/bin/python"), help="the app's interpreter")
    p.add_argument("--our-root", type=Path, default=ROOT, help="the checkout whose model_core runs (default: this)")
    p.add_argument("--random-transcoders", type=Path, metavar="DIR",
                   help="write random transcoders to DIR and check those instead of --transcoders")
    p.add_argument("--theirs-only", action="store_true",
                   help="the logits, circuit-tracer's graph and its own doubling only")
    args = p.parse_args(argv)
    global OUR_ROOT
    OUR_ROOT = args.our_root.resolve()
    checkpoint, transcoders = args.checkpoint.resolve(), args.transcoders.resolve()
    if args.random_transcoders:
        transcoders = args.random_transcoders.resolve()
        write_random_transcoders(transcoders, checkpoint)
    torch.manual_seed(0)

    model = replacement_model(checkpoint, transcoders)
    tokens = model.tokenizer(args.prompt, return_tensors="pt", add_special_tokens=False).input_ids[0]
    if tokens[0] != model.tokenizer.bos_token_id:  # as our CLI does; circuit-tracer's own fallback finds no id but 0
        tokens = torch.cat([torch.tensor([model.tokenizer.bos_token_id]), tokens])
    items = {}
    with torch.no_grad():
        tl_logits = model(tokens[None])[0]
    items["model_logits"] = difference(our_logits(args.our_python, checkpoint, tokens.tolist()), tl_logits,
                                       rtol=0.0, atol=1e-5 * max(1.0, float(tl_logits.abs().max())))
    theirs = their_graph(model, tokens, args.node_threshold, args.edge_threshold)
    double = node_to_double(theirs)
    their_run = their_doubling(model, tokens, *double[1:])
    if args.theirs_only:
        items["doubling_theirs"] = {"node": list(double[1:]), **doubling_moves_by_column(their_run, theirs, double[0])}
        items["graph_theirs"] = {"nodes": len(theirs["adjacency"]), "features": len(theirs["active_features"]),
                                 "kept": int(theirs["node_mask"].sum()), "replacement": theirs["replacement_score"],
                                 "completeness": theirs["completeness_score"]}
    else:
        with tempfile.TemporaryDirectory(prefix="ct-check-") as folder:
            ours = our_graph(args.our_python, checkpoint, transcoders, args.prompt, double[1:], folder,
                             args.node_threshold, args.edge_threshold)
        items.update(compare(ours, theirs, double, doubling_tensors(ours), their_run))
    ok = all(passed(item) for item in items.values())
    print(json.dumps({"result": "PASS" if ok else "FAIL",
                      "failed": [name for name, item in items.items() if not passed(item)], **items}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
