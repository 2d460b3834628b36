"""What a student inspects: one model, its version, and every cache computed from it (ModelCaches), which is
replaced as a whole whenever the model changes, so no cache outlives the model it was computed from."""
import copy
import threading
from dataclasses import dataclass, field, replace
from typing import Optional

import torch

from explorer.state.shipped import shipped_template
from model_core.checkpoints.checkpoint import Checkpoint

ANALYSIS_KEEP_BYTES = 8_000_000  # a hook-filtered analysis larger than this is recomputed, not kept


@dataclass
class Analysis:
    """One prompt run through the model with every activation cached."""

    prompt: str
    ids: list[int]
    labels: list[str]  # display label per position
    logits: torch.Tensor  # [T, V]; [1, V] (the last position) when only some hook points were kept
    cache: object  # ActivationCache


@dataclass
class Evaluation:
    """The Experiments tab's evaluation set for the inspected model, and what was measured on it."""

    name: str  # where the windows come from
    windows: torch.Tensor  # [N, T] token ids of the validation text
    data_id: Optional[int]  # id() of the Data tab's validation ids it was cut from (None: a built-in corpus)
    means: object = None  # mean activations for mean ablation, computed on first use
    maps: dict = field(default_factory=dict)  # ablation mode -> the knock-out map


@dataclass
class SAEChoice:
    """The SAE the Features tab reads for the inspected model."""

    sae: object  # SparseAutoencoder
    stats: object  # FeatureStats; None until first used (an upload's are computed then)
    source: str  # what the tab says it is: "uploaded: NAME.zip", "trained here" or "shipped with the app"


@dataclass
class HeadResults:
    """The Heads tab's results: its passes over the model's validation text and its circuits."""

    report: object = None  # HeadReport: roles, scores and the induction probe
    examples: object = None  # TopExamples: the contexts that most activate each neuron and head
    circuit_weights: object = None  # CircuitWeights: W_E, W_Q ... W_U as the circuits read them
    composition: Optional[dict] = None  # {"q", "k", "v"}: [L, H, L, H] composition scores
    copying: object = None  # [L, H] copying scores


@dataclass
class ModelCaches:
    """Everything computed from (or chosen for) the inspected model. Inspected.use() replaces it."""

    analysis: dict = field(default_factory=dict)  # (ids, hook names) -> Analysis; one kept
    evaluation: Optional[Evaluation] = None  # Experiments tab
    sae: Optional[SAEChoice] = None  # Features tab: an uploaded SAE or one trained here
    shipped_sae_stats: object = None  # Features tab: statistics of a shipped SAE that ships without them
    heads: HeadResults = field(default_factory=HeadResults)  # Heads tab
    transcoders: object = None  # Graph tab: transcoders trained here (graph_source.Transcoders)


@dataclass
class Inspected:
    held: Checkpoint  # the model, with its tokenizer and training record (read it via .checkpoint)
    name: str
    shared_key: Optional[str] = None  # "shipped:NAME" while inspecting an unmodified shipped model
    # held.model is a shipped model every session shares until one needs its own: hooks are per model object,
    # so the first use through .checkpoint or .model copies it (a class arriving at once copies nothing)
    shares_model: bool = False
    version: int = 0  # bumped whenever the model changes
    untrained: bool = False  # the model has its random initial weights (the Train tab's "Use the untrained model")
    caches: ModelCaches = field(default_factory=ModelCaches)
    lock: threading.RLock = field(default_factory=threading.RLock)  # the session's (Session.lock)

    @property
    def checkpoint(self) -> Checkpoint:
        """The inspected checkpoint, with a model of this session's own."""
        if self.shares_model:
            with self.lock:
                if self.shares_model:
                    self.held = replace(self.held, model=self.held.model.copy())
                    self.shares_model = False
        return self.held

    @property
    def model(self):
        return self.checkpoint.model

    @property
    def config(self):
        """The model's GPTConfig (read without copying a shared model)."""
        return self.held.model.cfg

    @property
    def tokenizer(self):
        return self.held.tokenizer

    def use(self, checkpoint: Checkpoint, name: str, shared_key: Optional[str] = None,
            shares_model: bool = False, untrained: bool = False) -> None:
        """Inspect a different model from now on, forgetting every cache of the old one (shared_key: analyses may
        be shared with other sessions; shares_model: checkpoint.model is a shipped template, copied on first use;
        untrained: its weights are the random initial ones)."""
        with self.lock:
            if not shares_model:
                checkpoint.model.eval()
            self.held, self.name, self.shared_key = checkpoint, name, shared_key
            self.shares_model, self.untrained = shares_model, untrained
            self.version += 1
            self.caches = ModelCaches()

    def use_shipped(self, name: str) -> None:
        """Inspect a shipped model (shared until this session first uses it)."""
        self.use(shipped_template(name), name, shared_key=f"shipped:{name}", shares_model=True)

    def analysis(self, prompt: str, ids: list[int], labels: list[str], names: Optional[tuple] = None) -> Analysis:
        """The cached full-activation run for this prompt (recomputed only when prompt or model change).
        names: only these hook points and the last position's logits (a large model's views ask for what they
        draw), in float16; such a run is kept only up to ANALYSIS_KEEP_BYTES, so 30 sessions of a 135M model stay
        small."""
        key = (tuple(ids), names)
        with self.lock:
            kept = self.caches.analysis
            if key not in kept:
                logits, cache = self.model.run_with_cache(torch.tensor([ids]), names_filter=names)
                if names is not None:  # half the bytes, the same whether this run is kept or not
                    cache.store = {name: t.to(torch.float16) for name, t in cache.store.items()}
                run = Analysis(prompt, ids, labels, logits[0] if names is None else logits[0, -1:].clone(), cache)
                kept.clear()  # keep one: caches of long prompts are megabytes
                if names is None or sum(t.nbytes for t in cache.store.values()) <= ANALYSIS_KEEP_BYTES:
                    kept[key] = run
                return run
            return kept[key]

    def adopter(self) -> "RunAdopter":
        """The adopt callback of a training run starting now (explorer.state.training_run.TrainingRun.adopt)."""
        return RunAdopter(self, self.version)

    def adopt_training_model(self, run, final: bool) -> None:
        """Inspect the model a run (explorer.state.training_run.TrainingRun) trained (its child confirmed a pause,
        final False: a copy, the run goes on; or the end: the model itself). A run that failed is never adopted: no
        message confirms it."""
        p = run.progress
        ckpt = Checkpoint.from_trainer(p, corpus=run.corpus)
        ckpt.model = (p.model if final else copy.deepcopy(p.model)).cpu()
        self.use(ckpt, f"trained on {run.corpus} ({p.step} steps)")


@dataclass
class RunAdopter:
    """Makes a training run's model the inspected one at each pause and at its end, unless the learner opened
    another model since the run started or was last adopted (a lesson's, a shipped one): that choice stays, and the
    run's model is declined, until the learner pauses the run themselves (consent). Stop does not consent: a lesson
    opened after a run began asks for Stop before its own Start, and keeps its model."""

    inspected: Inspected
    replaces: int  # the version of the inspected model the run's model may replace

    def __call__(self, run, final: bool) -> bool:
        with self.inspected.lock:
            if self.inspected.version != self.replaces:
                return False
            self.inspected.adopt_training_model(run, final)
            self.replaces = self.inspected.version
            return True

    def consent(self) -> None:
        """The learner pressed Pause: the run's model takes the place of whatever is inspected now."""
        self.replaces = self.inspected.version
