"""Captions of the Features tab, computed from the data (an SAE's features, one feature, steering)."""
from collections import Counter

import numpy as np

from explorer.teaching.captions import chart_captions


def log_density_caption(density) -> str:
    """'Of 1,024 features, 3 never fire on the validation text; half fire on more than 0.52% of tokens.'"""
    density = np.asarray(density, dtype=np.float64)
    dead = int((density == 0).sum())
    alive = density[density > 0]
    median = f"; half of the others fire on more than {np.median(alive):.2%} of tokens" if alive.size else ""
    return f"Of {len(density):,} features, {dead:,} never fire on the validation text{median}."


def listing_caption(about: str, by_activation: bool, position: int, label: str, here, density, n_tokens: int) -> str:
    """The SAE line, then what the listing shows: the features active at one token, or the densest ones."""
    here = np.asarray(here)
    active = int((here > 0).sum())
    if by_activation:
        top = int(np.argmax(here))
        listing = (f"At {position}:{label}, {active} of {len(here):,} features are active; the strongest is feature "
                   f"{top} ({here[top]:.2f}). Click a row to read it." if active else
                   f"No feature is active at {position}:{label}.")
    else:
        listing = f"The features that fire most often on the {n_tokens:,} validation tokens, densest first."
    return chart_captions({"SAE": about, "Features": listing, "How often they fire": log_density_caption(density)})


def hardest_token(top_tokens: list[str]) -> tuple[str, int]:
    """The token most of a feature's top places are on, and how many of them ('', 0 for none)."""
    return Counter(top_tokens).most_common(1)[0] if top_tokens else ("", 0)


def feature_density_caption(feature: int, density: float, n_tokens: int, top_tokens: list[str]) -> str:
    """'Feature 5 fires on 1.20% of 32,768 validation tokens, hardest on 'e' (7 of its top 12 places).'"""
    if density <= 0 or not top_tokens:
        return f"Feature {feature} never fires on the {n_tokens:,} validation tokens: it is dead."
    token, count = hardest_token(top_tokens)
    return (f"Feature {feature} fires on {density:.2%} of {n_tokens:,} validation tokens, hardest on '{token}' "
            f"({count} of its top {len(top_tokens)} places).")


def prompt_feature_caption(labels: list[str], values) -> str:
    """Where on the prompt the feature fires hardest."""
    values = np.asarray(values, dtype=np.float64)
    if not (values > 0).any():
        return "It does not fire anywhere on this prompt."
    at = int(np.argmax(values))
    return (f"On this prompt it fires at {int((values > 0).sum())} of {len(values)} tokens, hardest at "
            f"{at}:{labels[at]} ({values[at]:.2f}).")


def logit_effects_caption(feature: int, promoted: list[str], suppressed: list[str]) -> str:
    quote = lambda tokens: ", ".join(f"'{t}'" for t in tokens)  # noqa: E731
    return (f"Written into the residual stream, feature {feature} raises the logits of {quote(promoted)} most "
            f"and lowers {quote(suppressed)} most.")


def neurons_caption(neuron_rows: list[list]) -> str:
    """The neuron whose activations follow the feature best, and the other features that neuron follows."""
    if not neuron_rows:
        return "This model has no FFN neurons to compare with."
    neuron, corr, others = neuron_rows[0]
    if corr < 0.3:
        return (f"No FFN neuron follows this feature closely (the best, {neuron}, correlates {corr:.2f}): the "
                "feature is spread over many neurons, a direction none of them has to itself.")
    shared = "" if others.startswith("none") else (f"; that neuron also follows features {others}: one neuron, "
                                                   "several features (superposition)")
    return f"Of all FFN neurons, neuron {neuron} follows this feature most (correlation {corr:.2f}){shared}."


def feature_caption(feature: int, density: float, n_tokens: int, labels: list[str], on_prompt, top_tokens: list[str],
                    promoted: list[str], suppressed: list[str], neuron_rows: list[list]) -> str:
    return chart_captions({
        f"Feature {feature}": feature_density_caption(feature, density, n_tokens, top_tokens),
        "On the prompt": prompt_feature_caption(labels, on_prompt),
        "Logit effects": logit_effects_caption(feature, promoted, suppressed),
        "FFN neurons": neurons_caption(neuron_rows)})


def steering_caption(feature: int, strength: float, peak: float, plain: str, steered: str) -> str:
    """How much was added and how much of the text changed."""
    same = next((i for i, (a, b) in enumerate(zip(plain, steered)) if a != b), min(len(plain), len(steered)))
    change = ("The text is the same: the push was too weak to change a single choice." if plain == steered else
              "The two texts differ from their first character on." if same == 0 else
              f"The two texts agree for their first {same} characters, then part.")
    return (f"Steering adds {strength:g} × {peak:.2f} (feature {feature}'s largest activation on the validation "
            f"text) times its decoder direction at every position. {change}")


def sae_training_caption(steps, loss, l0, dead, explained, dead_tokens: int = 0, seen: int = 0,
                         layer: int | None = None, start: int = 0) -> str:
    """What the training chart shows so far: the loss from its first to its latest value, and the latest L0, dead
    fraction and explained variance; of an SAE, or (layer given) of the transcoder of the layer trained last (the
    series then hold that layer's steps only). dead_tokens: the run's dead window; seen: tokens trained on so far
    (the dead fraction is not measured before a window has passed); start: the step the layer started at."""
    if not len(steps):
        return ""
    who = "the SAE explains" if layer is None else f"layer {layer}'s transcoder explains"
    what = "the activations'" if layer is None else "its FFN output's"
    lead = (f"In {steps[-1]:,} steps" if layer is None else
            f"Layer {layer}, trained last (a dotted line marks where each layer starts): in its {steps[-1] - start:,} "
            "steps")
    window = f"{dead_tokens:,} tokens" if dead_tokens else "the dead window"
    dead_part = (f"{dead[-1]:.1%} of its features are dead (none fired on the last {window})"
                 if not dead_tokens or seen >= dead_tokens else
                 f"dead features are not yet measured (a feature counts as dead once it has not fired for {window}; "
                 f"{seen:,} seen so far)")
    return (f"{lead} the loss went from {loss[0]:.3g} to {loss[-1]:.3g}; on the latest batches {l0[-1]:.1f} "
            f"features are active per token, {who} {explained[-1]:.1%} of {what} variance, and {dead_part}.")
