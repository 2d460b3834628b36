"""The lesson checker's quantities about FFN neurons and an SAE's features (lesson_claims.QUANTITIES, the Features
tab): each measured with the functions the FFN and Features tabs draw from, on the step's prompt and settings.
explorer.lesson_check adds them to its MEASURES; view is its LessonView."""
from explorer.callbacks.common import analyse, layer_names
from explorer.callbacks.features import context_span, logit_ranking, neuron_rows, steering_run, top_place_tokens
from explorer.callbacks.features_source import current_sae
from explorer.common.errors import UserError
from explorer.teaching.captions_features import hardest_token
from model_core.features.readout import prompt_activations


def neuron_of(view, neuron: str) -> tuple[int, int]:
    """'2.89' -> (2, 89), checked against the step's model."""
    layer, index = (int(x) for x in neuron.split("."))
    cfg = view.session.inspected.config
    if cfg.attn_only or not (layer < cfg.n_layers and index < cfg.d_mlp):
        raise UserError(f"{view.model} has no FFN neuron {neuron} ({cfg.n_layers} layers of "
                        f"{0 if cfg.attn_only else cfg.d_mlp} neurons)")
    return layer, index


def position_of(view, position: str, length: int) -> int:
    if int(position) >= length:
        raise UserError(f"the prompt has positions 0 to {length - 1}")
    return int(position)


def neuron_activation(view, neuron: str, position: str) -> float:
    """As the FFN tab's table shows it: the neuron's output after the non-linearity (blocks.L.mlp.hook_post)."""
    layer, index = neuron_of(view, neuron)
    a = analyse(view.session, view.prompt, view.values.get("drop_unknown", False), names=layer_names(layer, "post"))
    post = a.cache["post", layer][0].float()  # [T, d_mlp]
    return float(post[position_of(view, position, len(post)), index])


def sae_choice(view):
    return current_sae(view.session)


def feature_of(view, feature: str) -> int:
    n_features = sae_choice(view).sae.n_features
    if int(feature) >= n_features:
        raise UserError(f"the SAE of {view.model} has features 0 to {n_features - 1}")
    return int(feature)


def prompt_features(view):
    """[T, d_sae] feature activations of the prompt, as the Features tab computes them."""
    return prompt_activations(view.session.inspected.model, sae_choice(view).sae, view.ids())


def feature_activation(view, feature: str, position: str) -> float:
    acts = prompt_features(view)
    return float(acts[position_of(view, position, len(acts)), feature_of(view, feature)])


def strongest_feature(view, position: str) -> int:
    acts = prompt_features(view)
    return int(acts[position_of(view, position, len(acts))].argmax())


def active_features(view, position: str) -> int:
    acts = prompt_features(view)
    return int((acts[position_of(view, position, len(acts))] > 0).sum())


def density(view, feature: str) -> float:
    return float(sae_choice(view).stats.density[feature_of(view, feature)])


def feature_top_token(view, feature: str) -> str:
    return hardest_token(top_place_tokens(view.session, sae_choice(view).stats, feature_of(view, feature)))[0]


def promoted_token(view, feature: str) -> str:
    _, up, _ = logit_ranking(view.session, sae_choice(view), feature_of(view, feature))
    return view.session.inspected.tokenizer.token_label(int(up[0]))


def table_rows(view, feature: str) -> list[list]:
    rows = neuron_rows(sae_choice(view).stats, feature_of(view, feature))
    if not rows:
        raise UserError(f"{view.model} has no FFN neurons to compare features with")
    return rows


def top_neuron(view, feature: str) -> str:
    return table_rows(view, feature)[0][0]


def neuron_correlation(view, neuron: str, feature: str) -> float:
    neuron_of(view, neuron)
    rows = table_rows(view, feature)
    found = [corr for name, corr, _ in rows if name == neuron]
    if not found:
        raise UserError(f"neuron {neuron} is not among the {len(rows)} neurons feature {feature}'s table lists "
                        f"({', '.join(row[0] for row in rows)})")
    return float(found[0])


def top_contexts(view, feature: str) -> list[tuple[str, str]]:
    """(the text shown before, the text shown after) the highlighted token of each of the feature's top contexts."""
    stats, decode = sae_choice(view).stats, view.session.inspected.tokenizer.decode
    out = []
    for pos, value in zip(stats.top_positions[feature_of(view, feature)].tolist(),
                          stats.top_values[int(feature)].tolist()):
        if value > 0:
            start, end = context_span(view.session, stats, pos)
            out.append((decode(stats.text_ids[start:pos].tolist()), decode(stats.text_ids[pos + 1:end].tolist())))
    return out


def contexts_right_after(view, feature: str, text: str) -> int:
    return sum(before.endswith(text) for before, _ in top_contexts(view, feature))


def contexts_with_after(view, feature: str, text: str) -> int:
    return sum(text in after for _, after in top_contexts(view, feature))


MAX_SEEDS = 10  # each seed is two generations


def seeds(first: str, last: str) -> range:
    if not 1 <= int(last) - int(first) + 1 <= MAX_SEEDS:
        raise UserError(f"seeds {first} to {last}: give from 1 to {MAX_SEEDS} seeds, the first one first")
    return range(int(first), int(last) + 1)


def steering(view, feature, strength, seed=None):
    """The Steer button's run on the step's prompt with the step's steering length and temperature, and its seed
    unless another is given."""
    v = view.values
    args = (view.prompt, int(feature), float(strength), v["steer_tokens"], v["steer_temperature"],
            v["steer_seed"] if seed is None else seed, v.get("drop_unknown", False))
    return view.once(("steer", *args), lambda: steering_run(view.session, *args))


def unsteered(view, seed=None):
    """The left column of the step's own Steer (its feature and strength): without steering the text is the same
    whatever they are, so a steered claim at the same settings shares the run."""
    return steering(view, view.values["feature"], view.values["strength"], seed).plain


def steered_count_over(view, text, feature, strength, first, last) -> int:
    return sum(steering(view, feature, strength, seed).steered.count(text) for seed in seeds(first, last))


def unsteered_count_over(view, text, first, last) -> int:
    return sum(unsteered(view, seed).count(text) for seed in seeds(first, last))


FEATURE_MEASURES = {  # lesson_claims.QUANTITIES -> the function measuring it (view, *the claim's arguments)
    "neuron activation": neuron_activation, "feature activation": feature_activation,
    "strongest feature": strongest_feature, "active features": active_features, "density": density,
    "feature top token": feature_top_token, "promoted token": promoted_token, "top neuron": top_neuron,
    "neuron correlation": neuron_correlation,
    "steered text": lambda view, feature, strength: steering(view, feature, strength).steered,
    "unsteered text": unsteered,
    "steered count": lambda view, text, feature, strength: steering(view, feature, strength).steered.count(text),
    "unsteered count": lambda view, text: unsteered(view).count(text),
    "steered count over seeds": steered_count_over, "unsteered count over seeds": unsteered_count_over,
    "contexts right after": contexts_right_after, "contexts with after": contexts_with_after,
}
