"""Experiments tab, "Who wrote the answer?": direct logit attribution on the shared prompt, and activation
patching between a clean and a corrupted prompt."""
from explorer.callbacks import validation
from explorer.callbacks.common import clamp_query, prompt_ids
from explorer.callbacks.work_budget import fits, largest_fitting, refuse_unless_fits
from explorer.common.controls import PATCH_CHOICES
from explorer.common.errors import UserError
from explorer.figures.attribution import attribution_figure, head_source_figure, patching_figure
from explorer.figures.common import head_label, index_labels
from explorer.state.session import Session, require_model
from explorer.teaching.captions_attribution import attribution_caption, patching_caption, source_caption
from explorer.teaching.prompt_pairs import prompt_pair
from model_core.analysis.attribution import logit_attribution
from model_core.analysis.cost import patching_ops
from model_core.analysis.patching import PATCH_KINDS, patching_sweep

PATCHED = {  # sweep kind -> (what is copied, rows, columns)
    "resid_pre": ("the residual stream", "layer", "position"),
    "z": ("a head's output", "layer", "head"),
    "z_pos": ("a head's output at one position", "head", "position"),
    "mlp_out": ("an FFN layer's output", "layer", "position"),
}
assert set(PATCHED) == set(PATCH_KINDS) == set(PATCH_CHOICES.values())


def token_choice(session: Session, text, name: str):
    """A token typed as its text (' Paris', with its leading space): its id; empty: None (automatic)."""
    if text is None or text == "":
        return None
    if not isinstance(text, str) or len(text) > 100:
        raise UserError(f"{name}: type the token's text, such as “ Paris” (with its leading space).")
    ids = session.inspected.tokenizer.encode(text)
    if len(ids) != 1:
        labels = " | ".join(session.inspected.tokenizer.token_label(i) for i in ids[:8])
        raise UserError(f"{name}: “{text}” is {len(ids)} tokens ({labels}), not one; type a single token, with its "
                        "leading space if it has one, or leave it empty for the model's own top token.")
    return ids[0]


def logit_name(session: Session, target: int, baseline) -> str:
    label = session.inspected.tokenizer.token_label
    return f"the logit of {label(target)}" + (f" minus that of {label(baseline)}" if baseline is not None else "")


def attribution_parts(attribution) -> list[tuple[str, float]]:
    """(name, value) of every bar of the split: the embeddings, each layer's attention and FFN, the biases."""
    parts = [("embeddings", attribution.embed)]
    for layer in range(len(attribution.heads)):
        parts.append((f"layer {layer} attention", float(attribution.heads[layer].sum())))
        if attribution.mlps is not None:
            parts.append((f"layer {layer} FFN", float(attribution.mlps[layer])))
    return parts + [("biases", attribution.bias)]


def logit_attribution_view(session: Session, prompt: str, position=-1, target: str = "", baseline: str = "",
                           drop_unknown: bool = False):
    """-> parts figure, the top head by source position, numbers, caption."""
    require_model(session)
    ids = prompt_ids(session, prompt, drop_unknown)
    position = clamp_query(position, len(ids))
    target_id, baseline_id = token_choice(session, target, "Answer"), token_choice(session, baseline, "Against")
    attribution, run = logit_attribution(session.inspected.model, ids, position, target_id, baseline_id)
    parts = attribution_parts(attribution)
    what = logit_name(session, attribution.target, attribution.baseline)
    labels = index_labels([session.inspected.tokenizer.token_label(i) for i in ids])
    layer, head = attribution.top_head()
    sources = run.head_by_source(layer, head, attribution.target, attribution.baseline)
    where = f"after {labels[position]}"
    numbers = (f"| | value |\n|---|---:|\n| {what} {where} | {attribution.logit:.4f} |\n"
               f"| sum of the parts | {attribution.total:.4f} |\n| difference | "
               f"{attribution.total - attribution.logit:+.1e} |")
    return (attribution_figure(attribution.heads, parts, what),
            head_source_figure(sources, labels[:position + 1], head_label(layer, head), what),
            numbers,
            attribution_caption(f"{what[0].upper()}{what[1:]} {where}", attribution.logit, attribution.total,
                                attribution.heads, parts) + " " + source_caption(head_label(layer, head), sources,
                                                                                 labels[:position + 1]))


def activation_patching_view(session: Session, clean: str, corrupted: str,
                             kind: str = "residual stream (layer × position)", layer=0, target: str = "",
                             baseline: str = "", drop_unknown: bool = False):
    """-> heatmap of the share of the clean answer each patch restores, caption."""
    require_model(session)
    sweep = PATCH_CHOICES[validation.choice(kind, "What to patch", list(PATCH_CHOICES))]
    copied, rows, cols = PATCHED[sweep]
    clean_ids = prompt_ids(session, clean, drop_unknown)
    corrupted_ids = prompt_ids(session, corrupted, drop_unknown)
    layer = min(max(validation.whole_number(layer, "Layer", default=0), 0), session.inspected.config.n_layers - 1)
    if len(clean_ids) == len(corrupted_ids):  # else the sweep says why it cannot run, before any work
        refuse_costly_patching(session, clean_ids, corrupted_ids, sweep, layer)
    result = patching_sweep(session.inspected.model, clean_ids, corrupted_ids, sweep, layer,
                            token_choice(session, target, "Answer"), token_choice(session, baseline, "Against"))
    label = session.inspected.tokenizer.token_label
    positions = index_labels([f"{label(a)}" if a == b else f"{label(a)}/{label(b)}"
                              for a, b in zip(clean_ids, corrupted_ids)])
    axis = {"layer": [f"layer {i}" for i in range(session.inspected.config.n_layers)],
            "head": [f"head {i}" for i in range(session.inspected.config.n_heads)], "position": positions}
    row, col = result.best()
    best = f"{axis[rows][row]}, {axis[cols][col]}" + (f" (layer {layer})" if sweep == "z_pos" else "")
    title = (f"Patching {copied}: share of {label(result.target)} over {label(result.baseline)} restored"
             + (f" (layer {layer})" if sweep == "z_pos" else ""))
    x_title = "position (clean/corrupted token where they differ)" if cols == "position" else cols
    return (patching_figure(result.restored, axis[rows], axis[cols], title, x_title, rows),
            patching_caption(copied, best, float(result.restored[row, col]), result.clean_diff, result.corrupted_diff,
                             label(result.target), label(result.baseline)))


def refuse_costly_patching(session: Session, clean_ids: list, corrupted_ids: list, sweep: str, layer: int) -> None:
    """UserError saying how much to shorten when the sweep is over the heavy-work limit (rows x tokens x model)."""
    cfg, T = session.inspected.config, len(clean_ids)
    first = next((i for i, (a, b) in enumerate(zip(clean_ids, corrupted_ids)) if a != b), T - 1)
    cost = lambda n: patching_ops(cfg, n, min(first, n - 1), sweep, layer)  # noqa: E731 - the prompts cut to n
    if fits(cost(T)):
        return
    copied, rows, cols = PATCHED[sweep]
    sizes = {"layer": cfg.n_layers, "head": cfg.n_heads, "position": T - first}
    longest = largest_fitting(cost, T)
    advice = [f"shorten both prompts to at most {longest} tokens"] if longest >= 2 else []
    if cols == "position" and fits(patching_ops(cfg, T, T - 1, sweep, layer)):
        advice.append(f"make them differ later (only positions from the first difference on are patched; yours "
                      f"differ from position {first})")
    if sweep != "z" and fits(patching_ops(cfg, T, first, "z")):
        advice.append("patch “each head, all positions (layer × head)”, which is cheaper")
    copies = sizes[rows] * sizes[cols]
    refuse_unless_fits(cost(T), f"Patching {copied} runs {sizes[rows]} {rows}s × {sizes[cols]} {cols}s = "
                                f"{copies:,} copies of the {T}-token prompt through the model, which",
                       ("To fit, " + "; or ".join(advice) + ".") if advice else
                       "This sweep does not fit at any length for a model this large: patch a smaller model.")


def example_pair(session: Session):
    """-> clean and corrupted prompts of the built-in pair for the inspected model, and what the pair shows."""
    clean, corrupted, shows = prompt_pair(session.inspected.name)
    return clean, corrupted, f"Example pair: {shows}."
