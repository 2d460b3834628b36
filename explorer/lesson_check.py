"""Measure what a lesson claims (its `expect:` lines) on the real model, step by step, as a student who followed
the lesson from step 1 would see it: each step's settings applied to one session as the lesson player applies them
(a named model opened, unnamed controls keeping their values), then each claim measured with the functions the
app's charts and captions are drawn from. `python -m explorer.lessons check FILE...` runs it.

A step after one on the Train tab may inspect the model the student trained, which no checker knows: claims about
the model there are refused until a step names a shipped model again."""
from dataclasses import dataclass
from typing import Optional

import torch

from explorer.callbacks.attribution import attribution_parts, token_choice
from explorer.callbacks.common import all_layers, analyse, prompt_ids
from explorer.callbacks.experiments import evaluation_set, means_for
from explorer.callbacks.grokking import lab_of
from explorer.callbacks.heads import report_of
from explorer.callbacks.links import apply_link
from explorer.callbacks.model_size import count_params
from explorer.callbacks.sampling import parse_table, settings
from explorer.callbacks.second_model import readable_text, scored
from explorer.callbacks.train import model_config, prepare_controls_data
from explorer.common.controls import ARCH_FIELDS, CONTROL_NAMES, DEFAULT_COMPARISON, PATCH_CHOICES
from explorer.common.errors import UserError
from explorer.common.shipped_list import DEFAULT_MODEL
from explorer.lesson_check_features import FEATURE_MEASURES
from explorer.lesson_check_graph import GRAPH_MEASURES
from explorer.state.session import new_session
from explorer.state.shipped import shipped_template
from explorer.teaching import view_params
from explorer.teaching.lesson_claims import Claim, claim_model, holds, models_in_effect, shown
from explorer.teaching.lessons import Lesson
from model_core import GPT
from model_core.analysis.ablation import Ablation, eval_windows, validation_loss
from model_core.analysis.attribution import logit_attribution
from model_core.analysis.comparison import bits_per_character
from model_core.analysis.heads import head_statistics
from model_core.analysis.patching import patching_sweep
from model_core.analysis.roles import prompt_roles
from model_core.data.tasks.examples import is_examples
from model_core.model.sampling import compare, filter_logits, generate
from model_core.training.train_config import TrainConfig

GREEDY_TOKENS = 40  # tokens a "greedy continuation" claim reads
COMPARE_TOKENS = 150  # the Side by side comparison's default length


@dataclass
class ClaimResult:
    claim: Claim
    step: int  # 1-based, as the player counts
    model: str  # the model it was measured on ("" when none could be)
    measured: object = None
    problem: str = ""  # why it could not be measured (a refused claim fails too)

    @property
    def ok(self) -> bool:
        return not self.problem and holds(self.claim, self.measured)

    def message(self) -> str:
        where = f"line {self.claim.line}: expect: {self.claim.text}"
        if self.problem:
            return f"{where}: {self.problem}"
        on = f"on {self.model}" if self.model else "from the step's controls"
        return f"{where}: measured {shown(self.measured)} {on} (step {self.step})"


class LessonView:
    """One session walked through a lesson: its model and the value of every named control."""

    def __init__(self):
        self.session = new_session(DEFAULT_MODEL)
        self.values = {name: control.component.value for name, control in view_params.CONTROLS.items()
                       if name != "tab"}
        self.model, self.trained_at, self.memo = DEFAULT_MODEL, None, {}

    def enter(self, number: int, step) -> None:
        _, _, values = apply_link(self.session, step.settings)
        self.values.update(values)
        if "model" in values:
            self.model, self.trained_at, self.memo = values["model"], None, {}
        if values.get("tab") == "train" and self.trained_at is None:
            self.trained_at = number

    def measure(self, claim: Claim):
        if claim.needs_model and self.trained_at is not None:
            raise UserError(f"since step {self.trained_at} (the Train tab) the student may inspect a model they "
                            "trained, which the checker cannot know: name a shipped model with `model:` in this step "
                            "or leave the claim out")
        with self.session.lock:
            return MEASURES[claim.quantity](self, *claim.args)

    def once(self, key, compute):
        """compute() the first time key is asked for on this model (a sweep serves many claims)."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    @property
    def prompt(self) -> str:
        return self.values["prompt"]

    def ids(self, text: Optional[str] = None) -> list[int]:
        return prompt_ids(self.session, self.prompt if text is None else text, self.values.get("drop_unknown", False))

    def token(self, text: str, name: str = "Token") -> Optional[int]:
        return token_choice(self.session, text, name)


def lesson_claims(lesson: Lesson, models: Optional[set] = None) -> list[ClaimResult]:
    """Every claim of the lesson measured at its step; models: only the claims measured on these shipped models
    ("" for those that need none). The walk ends at the last step with a claim to measure: a later step's model
    is never opened."""
    chosen = [[c for c in step.claims if models is None or claim_model(c, model) in models]
              for step, model in zip(lesson.steps, models_in_effect(lesson.steps))]
    last = max((n for n, claims in enumerate(chosen) if claims), default=-1)
    view, results = LessonView(), []
    for number, (step, claims) in enumerate(zip(lesson.steps[: last + 1], chosen), 1):
        view.enter(number, step)
        for claim in claims:
            model = claim_model(claim, view.model)
            try:
                results.append(ClaimResult(claim, number, model, view.measure(claim)))
            except (UserError, ValueError) as err:
                results.append(ClaimResult(claim, number, model, problem=str(err)))
    return results


# ---------------------------------------------------------------- the quantities (lesson_claims.QUANTITIES)

def next_logits(view: LessonView) -> torch.Tensor:
    return analyse(view.session, view.prompt, view.values.get("drop_unknown", False)).logits[-1].float()


def top_token(view: LessonView) -> str:
    return view.session.inspected.tokenizer.decode([int(next_logits(view).argmax())])


def filtered(view: LessonView) -> torch.Tensor:
    """The next-token probabilities the Sampling tab shows after its filters."""
    v = view.values
    s = settings(v["temperature"], v["top_k"], v["top_p"], v["min_p"])
    return filter_logits(next_logits(view), s.temperature, s.top_k, s.top_p, s.min_p)[0]


def probability(view: LessonView, token: str) -> float:
    return float(filtered(view)[view.token(token)])


def tokens_kept(view: LessonView) -> int:
    return int((filtered(view) > 0).sum())


def greedy_continuation(view: LessonView) -> str:
    steps = generate(view.session.inspected.model, view.ids(), GREEDY_TOKENS, temperature=0.0, keep_distributions=False)
    return view.session.inspected.tokenizer.decode([s.token for s in steps])


def most_repetitive_column(view: LessonView) -> str:
    table = parse_table(DEFAULT_COMPARISON)
    columns = compare(view.session.inspected.model, view.ids(), table, COMPARE_TOKENS, seed=int(view.values["seed"]))
    top = max(columns, key=lambda column: column.repetition_rate)
    top_p = f" with top-p {top.settings.top_p:g}" if top.settings.top_p < 1 else ""
    return f"temperature {top.settings.temperature:g}{top_p}"


def patterns(view: LessonView):
    n_layers = view.session.inspected.config.n_layers
    a = analyse(view.session, view.prompt, view.values.get("drop_unknown", False), names=all_layers(n_layers, "pattern"))
    return a.cache.stack("pattern")[:, 0].float().numpy(), a.ids  # [L, H, T, T]


def head_of(view: LessonView, head: str) -> tuple[int, int]:
    layer, index = (int(x) for x in head.split("."))
    cfg = view.session.inspected.config
    if not (layer < cfg.n_layers and index < cfg.n_heads):
        raise UserError(f"{view.model} has no head {head} ({cfg.n_layers} layers of {cfg.n_heads} heads)")
    return layer, index


def head_role(view: LessonView, head: str):
    """The roles.HeadRole the Attention tab's caption names for the head on the step's prompt."""
    layer, index = head_of(view, head)
    pattern, ids = patterns(view)
    return prompt_roles(pattern, ids)[0][layer * view.session.inspected.config.n_heads + index]


def heads_with_role(view: LessonView, label: str) -> int:
    pattern, ids = patterns(view)
    return sum(role.label == label for role in prompt_roles(pattern, ids)[0])


def bits_per_char(view: LessonView, name: str) -> float:
    """Bits per character of shipped model name on the prompt, read as Compare A and B reads it beside the
    inspected model."""
    other = shipped_template(name)
    inspected = view.session.inspected.checkpoint
    text = readable_text(view.prompt, [inspected, other], view.values.get("drop_unknown", False))
    nats, chars, _, _ = scored(other, text)
    return bits_per_character(nats, chars)


def attention(view: LessonView, head: str, query: str, key: str) -> float:
    pattern = patterns(view)[0][head_of(view, head)]
    if not int(key) <= int(query) < len(pattern):
        raise UserError(f"the prompt has positions 0 to {len(pattern) - 1}, and a query sees only keys up to itself")
    return float(pattern[int(query), int(key)])


def brightest_column(view: LessonView, head: str) -> int:
    return int(patterns(view)[0][head_of(view, head)].sum(0).argmax())


def first_token_share(view: LessonView, head: str) -> float:
    layer, index = head_of(view, head)
    return float(head_statistics(patterns(view)[0])["first_token"][layer, index])


def induction_score(view: LessonView, head: str) -> float:
    return float(report_of(view.session).scores["induction"][head_of(view, head)])


def split(view: LessonView):
    """(Attribution, its run) of Split the logit: the last position, the step's answer and against tokens."""
    v = view.values
    target, baseline = view.token(v["answer"], "Answer"), view.token(v["against"], "Against")
    return view.once(("split", view.prompt, target, baseline),
                     lambda: logit_attribution(view.session.inspected.model, view.ids(), -1, target, baseline))


def split_logit(view: LessonView) -> float:
    return split(view)[0].logit


def largest_part(view: LessonView) -> str:
    return max(attribution_parts(split(view)[0]), key=lambda part: abs(part[1]))[0]


def part(view: LessonView, name: str) -> float:
    parts = dict(attribution_parts(split(view)[0]))
    if name not in parts:
        raise UserError(f"the split of {view.model} has no part {name!r}")
    return parts[name]


def top_head(view: LessonView) -> str:
    return ".".join(str(x) for x in split(view)[0].top_head())


def top_head_source(view: LessonView) -> int:
    attribution, run = split(view)
    sources = run.head_by_source(*attribution.top_head(), attribution.target, attribution.baseline)
    return int(abs(sources).argmax())


def sweep(view: LessonView):
    """The PatchingResult of the step's Patch button: its clean and corrupted prompts, what to patch, its layer."""
    v = view.values
    kind = PATCH_CHOICES[v["patch"]]
    layer = min(int(v["layer"]), view.session.inspected.config.n_layers - 1)
    clean, corrupted = view.ids(v["clean"]), view.ids(v["corrupted"])
    target, baseline = view.token(v["answer"], "Answer"), view.token(v["against"], "Against")
    key = ("patch", tuple(clean), tuple(corrupted), kind, layer if kind == "z_pos" else None, target, baseline)
    return view.once(key, lambda: patching_sweep(view.session.inspected.model, clean, corrupted, kind, layer, target,
                                                 baseline))


def restored(view: LessonView, cell: str) -> float:
    result = sweep(view)
    (row_name, row), (col_name, col) = (side.split() for side in cell.split(", "))
    if (row_name, col_name) != (result.rows, result.cols):
        raise UserError(f"this step's patching chart has a {result.rows} per row and a {result.cols} per column")
    return float(result.restored[int(row), int(col)])


def most_restored(view: LessonView) -> str:
    result = sweep(view)
    row, col = result.best()
    return f"{result.rows} {row}, {result.cols} {col}"


def loss_rise(view: LessonView, head: str) -> float:
    session, ablation = view.session, Ablation(heads=(head_of(view, head),))
    windows, means = evaluation_set(session).windows, means_for(session, "mean")
    model = session.inspected.model
    return validation_loss(model, windows, ablation, means) - validation_loss(model, windows)


def vocabulary_size(view: LessonView) -> int:
    prepare_controls_data(view.session, *(view.values[k] for k in ("corpus", "tokenizer", "bpe_vocab", "val_split")))
    return view.session.workspace.data.tokenizer.vocab_size


def text_tokens(view: LessonView) -> int:
    vocabulary_size(view)
    data = view.session.workspace.data
    if is_examples(data.train):
        raise UserError(f"{view.values['corpus']!r} is a task of examples, not a text: claim 'training examples'")
    return len(data.train) + len(data.val)


def training_examples(view: LessonView) -> int:
    """Examples of a task the model trains on (the rest are its test examples)."""
    vocabulary_size(view)
    if not is_examples(view.session.workspace.data.train):
        raise UserError(f"{view.values['corpus']!r} is a text, not a task of examples: claim 'text tokens'")
    return len(view.session.workspace.data.train)


def train_config(view: LessonView):
    """The GPTConfig the Train tab's controls describe, for the data Start would prepare."""
    vocabulary_size(view)
    arch = {field: view.values[CONTROL_NAMES.get(field, field)] for field in ARCH_FIELDS}
    return model_config(view.session, arch)


def parameters(view: LessonView) -> int:
    return count_params(train_config(view))


def untrained_loss(view: LessonView) -> float:
    cfg, data = train_config(view), view.session.workspace.data
    torch.manual_seed(TrainConfig().seed)  # as Start seeds it
    model = GPT(cfg).eval()
    text = data.val if len(data.val) > 1 else data.train
    if is_examples(text):  # a task: scored where its targets are (the answer after "="), as training scores it
        with torch.inference_mode():
            return float(model(text[:, 0], text[:, 1])[1])
    return validation_loss(model, eval_windows(text, cfg.block_size))


def lab(view: LessonView):
    """The Grokking tab's measurements of the step's model (a modular-addition one)."""
    return view.once("grokking lab", lambda: lab_of(view.session))


MEASURES = {  # lesson_claims.QUANTITIES -> the function measuring it (view, *the claim's arguments)
    "top token": top_token, "probability": probability, "tokens kept": tokens_kept,
    "greedy continuation": greedy_continuation, "most repetitive column": most_repetitive_column,
    "role": lambda view, head: head_role(view, head).label,
    "role score": lambda view, head: head_role(view, head).score,
    "heads with role": heads_with_role, "attention": attention, "brightest column": brightest_column,
    "first-token share": first_token_share, "induction score": induction_score,
    "split logit": split_logit, "largest part": largest_part, "part": part,
    "head part": lambda view, head: float(split(view)[0].heads[head_of(view, head)]),
    "top head": top_head, "top head's source": top_head_source,
    "clean difference": lambda view: sweep(view).clean_diff,
    "corrupted difference": lambda view: sweep(view).corrupted_diff,
    "restored": restored, "most restored": most_restored, "loss rise": loss_rise,
    "bits per character": bits_per_char, "vocabulary size": vocabulary_size, "text tokens": text_tokens,
    "training examples": training_examples,
    "parameters": parameters, "untrained loss": untrained_loss,
    "test accuracy": lambda view: lab(view).test_accuracy,
    "key frequencies": lambda view: len(lab(view).key_frequencies),
    **FEATURE_MEASURES,
    **GRAPH_MEASURES,
}
