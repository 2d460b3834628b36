"""Features tab: an SAE's features listed (by density, or by activation at one token of the prompt); one feature
read in full (the prompt coloured by it, its top contexts from the validation text, its activation histogram,
the tokens it promotes and suppresses, the FFN neurons whose activations follow it); steering with it."""
from dataclasses import dataclass

import numpy as np

from explorer.callbacks import validation
from explorer.callbacks.common import clamp_query, prompt_ids
from explorer.callbacks.features_source import current_sae, describe_choice, load_sae_upload  # noqa: F401
from explorer.callbacks.prompting import token_labels
from explorer.callbacks.sampling import new_tokens, settings
from explorer.common.errors import UserError
from explorer.figures.features import (
    examples_html,
    feature_histogram_figure,
    log_density_figure,
    logit_effects_figure,
    prompt_activation_html,
    steering_html,
)
from explorer.state.session import Session
from explorer.teaching.captions_features import feature_caption, listing_caption, steering_caption
from model_core.features.readout import logit_effects, prompt_activations, steered_generation

ORDERS = ("activation at the chosen token", "density")
LIST_HEADERS = ["feature", "activation here", "density", "largest activation", "fires hardest on"]
NEURON_HEADERS = ["FFN neuron", "correlation with this feature", "features this neuron also follows"]
LISTED = 60  # rows of the listing
LOGIT_TOKENS = 10  # promoted and suppressed tokens shown
MAX_STRENGTH = 100.0  # |strength| in units of the feature's largest activation


def _feature(choice, value, strongest: int) -> int:
    """The feature number asked for; -1 (the default) picks `strongest` (the strongest at the chosen token)."""
    f = validation.whole_number(value, "Feature", minimum=-1, maximum=choice.sae.n_features - 1, default=-1)
    return strongest if f < 0 else f


def _order(value) -> str:
    return validation.choice(value or ORDERS[0], "List features by", ORDERS)


def _top_token(session: Session, stats, feature: int) -> str:
    """The token at the feature's strongest place in the validation text ('' when it never fired)."""
    if stats.top_values[feature, 0] <= 0:
        return ""
    return session.inspected.tokenizer.token_label(int(stats.text_ids[stats.top_positions[feature, 0]]))


def features_list(session: Session, prompt: str, order: str = ORDERS[0], position=-1, drop_unknown: bool = False):
    """-> (rows of the listing, the SAE's log-density figure, caption markdown)."""
    choice, order = current_sae(session), _order(order)
    stats = choice.stats
    ids = prompt_ids(session, prompt, drop_unknown)
    at = clamp_query(position, len(ids))
    here = prompt_activations(session.inspected.model, choice.sae, ids)[at].numpy()  # [d_sae]
    if order == ORDERS[0]:
        picked = [int(f) for f in np.argsort(-here, kind="stable")[:LISTED] if here[f] > 0]
    else:
        picked = [int(f) for f in np.argsort(-stats.density, kind="stable")[:LISTED]]
    rows = [[f, round(float(here[f]), 3), f"{stats.density[f]:.3%}", round(float(stats.top_values[f, 0]), 3),
             _top_token(session, stats, f)] for f in picked]
    counts, edges = _log_density(stats.density)
    label = token_labels(session.inspected.tokenizer, [ids[at]])[0]
    dead = int((stats.density == 0).sum())
    return (rows, log_density_figure(counts, edges, dead, choice.sae.n_features),
            listing_caption(describe_choice(choice, session), order == ORDERS[0], at, label, here, stats.density,
                            stats.n_tokens))


def _log_density(density: np.ndarray, bins: int = 30):
    logs = np.log10(np.maximum(density, 1e-7))
    return np.histogram(logs, bins=bins, range=(-7.0, 0.0))


def context_span(session: Session, stats, pos: int) -> tuple[int, int]:
    """[start, end) of the validation text shown around the top place pos: a few tokens before and after it, within
    the window the place was seen in (it saw nothing outside it)."""
    small = session.inspected.tokenizer.vocab_size <= 512  # characters: more of them make a readable context
    before, after = (40, 10) if small else (14, 4)
    start = max(pos - before, pos // stats.window * stats.window)
    return start, min(pos + after + 1, (pos // stats.window + 1) * stats.window, len(stats.text_ids))


def top_contexts(session: Session, stats, feature: int):
    """[(labels, index of the top place in them, activations shown)] for the feature's top places."""
    out = []
    for pos, value in zip(stats.top_positions[feature].tolist(), stats.top_values[feature].tolist()):
        if value <= 0:
            break
        start, end = context_span(session, stats, pos)
        ids = stats.text_ids[start:end].tolist()
        acts = [value if start + i == pos else 0.0 for i in range(len(ids))]
        out.append((token_labels(session.inspected.tokenizer, ids), pos - start, acts))
    return out


def neuron_rows(stats, feature: int) -> list[list]:
    """The rows of the feature's neuron table: [layer.neuron, correlation, the other features that neuron follows]."""
    if stats.neuron_layer < 0 or stats.neuron_index.shape[1] == 0:
        return []
    rows = []
    for neuron, corr in zip(stats.neuron_index[feature].tolist(), stats.neuron_corr[feature].tolist()):
        others = [(int(f), float(c)) for f, c in zip(stats.feature_index[neuron], stats.feature_corr[neuron])
                  if int(f) != feature and c > 0.05][:5]
        rows.append([f"{stats.neuron_layer}.{neuron}", round(corr, 3),
                     ", ".join(f"{f} ({c:.2f})" for f, c in others) or "none above 0.05"])
    return rows


def feature_view(session: Session, prompt: str, feature=-1, position=-1, drop_unknown: bool = False):
    """-> (prompt HTML, examples HTML, histogram figure, logit-effects figure, neuron rows, caption markdown).
    feature -1: the strongest feature at the token `position` of the prompt."""
    choice = current_sae(session)
    stats, tok = choice.stats, session.inspected.tokenizer
    ids = prompt_ids(session, prompt, drop_unknown)
    labels = token_labels(tok, ids)
    acts = prompt_activations(session.inspected.model, choice.sae, ids)  # [T, d_sae]
    f = _feature(choice, feature, int(acts[clamp_query(position, len(ids))].argmax()))
    on_prompt = acts[:, f].numpy()  # [T]
    effects, up, down = logit_ranking(session, choice, f)
    vocab_label = tok.token_label
    scale = float(stats.top_values[f, 0]) or float(on_prompt.max()) or 1.0
    neurons = neuron_rows(stats, f)
    return (prompt_activation_html(labels, on_prompt, f, scale),
            examples_html(top_contexts(session, stats, f), stats.top_values[f][stats.top_values[f] > 0], f),
            feature_histogram_figure(stats.hist_counts[f], stats.top_values[f, 0], float(stats.density[f]), f,
                                     stats.n_tokens),
            logit_effects_figure([vocab_label(int(i)) for i in up], effects[up], [vocab_label(int(i)) for i in down],
                                 effects[down], f),
            neurons,
            feature_caption(f, float(stats.density[f]), stats.n_tokens, labels, on_prompt,
                            top_place_tokens(session, stats, f), [vocab_label(int(i)) for i in up[:3]],
                            [vocab_label(int(i)) for i in down[:3]], neurons))


def logit_ranking(session: Session, choice, feature: int):
    """(effects [vocab], the LOGIT_TOKENS token ids it raises most, most first, those it lowers most, most first)."""
    effects = logit_effects(session.inspected.model, choice.sae, feature).numpy()  # [vocab]
    order = np.argsort(effects, kind="stable")
    return effects, order[::-1][:LOGIT_TOKENS], order[:LOGIT_TOKENS]


def top_place_tokens(session: Session, stats, feature: int) -> list[str]:
    """The tokens at the feature's top places, strongest first."""
    return [session.inspected.tokenizer.token_label(int(stats.text_ids[p]))
            for p, v in zip(stats.top_positions[feature].tolist(), stats.top_values[feature].tolist()) if v > 0]


def features_page(session: Session, prompt: str, order: str = ORDERS[0], position=-1, feature=-1,
                  drop_unknown: bool = False):
    """The tab's whole view: the listing, then the chosen feature."""
    return (*features_list(session, prompt, order, position, drop_unknown),
            *feature_view(session, prompt, feature, position, drop_unknown))


@dataclass
class Steering:
    feature: int
    strength: float  # in units of the feature's largest activation
    peak: float  # that activation
    seed: int
    temperature: float
    prompt: str
    plain: str  # the continuation without steering
    steered: str  # ... and with it, same seed


def steering_run(session: Session, prompt: str, feature=-1, strength=4.0, max_new_tokens=60, temperature=0.8, seed=0,
                 drop_unknown: bool = False) -> Steering:
    """The text written without and with strength x the feature's largest activation times its decoder direction
    added at its hook, same prompt and seed (feature -1: the strongest at the prompt's last token)."""
    choice = current_sae(session)
    ids = prompt_ids(session, prompt, drop_unknown)
    f = _feature(choice, feature, int(prompt_activations(session.inspected.model, choice.sae, ids)[-1].argmax()))
    s = validation.number(strength, "Strength", minimum=-MAX_STRENGTH, maximum=MAX_STRENGTH, default=4.0)
    n, seed, knobs = new_tokens(max_new_tokens), validation.seed(seed), settings(temperature, 0, 1.0, 0.0)
    peak = float(choice.stats.top_values[f, 0])
    if peak <= 0:
        raise UserError(f"Feature {f} never fires on the validation text, so it has no natural size to steer "
                        "with: pick a feature that fires.")
    tok, model = session.inspected.tokenizer, session.inspected.model
    plain, steered = (steered_generation(model, ids, choice.sae, f, amount, n, knobs, seed) for amount in (0.0, s * peak))
    texts = [tok.decode([step.token for step in steps]) for steps in (plain, steered)]
    return Steering(f, s, peak, seed, knobs.temperature, tok.decode(ids), *texts)


def steer_view(session: Session, prompt: str, feature=-1, strength=4.0, max_new_tokens=60, temperature=0.8, seed=0,
               drop_unknown: bool = False):
    """-> (two columns of generated text, caption): steering_run's two texts side by side."""
    run = steering_run(session, prompt, feature, strength, max_new_tokens, temperature, seed, drop_unknown)
    return (steering_html(run.prompt, run.plain, run.steered, run.feature, run.strength, run.seed, run.temperature),
            steering_caption(run.feature, run.strength, run.peak, run.plain, run.steered))
