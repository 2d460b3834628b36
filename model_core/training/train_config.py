"""TrainConfig: the flat, validated description of one training run (optimiser, schedule, evaluation)."""
from dataclasses import asdict, dataclass, fields
from typing import Optional

DEVICES = ("auto", "cpu", "cuda", "mps")
OPTIMIZERS = ("adamw", "muon")
PRECISIONS = ("fp32", "bf16")
MAX_NS_STEPS = 10  # Muon's Newton-Schulz iterations: 5 is usual, more buys nothing


class TrainConfigError(ValueError):
    """A training setting is invalid; the message says what and how to fix it."""


@dataclass
class TrainConfig:
    max_steps: int = 1200  # optimisation steps; the cosine schedule reaches min_lr here
    batch_size: int = 16  # windows per step
    lr: float = 5e-3  # peak learning rate, reached after warmup
    min_lr: Optional[float] = None  # floor of the cosine decay; None: lr / 10
    warmup_steps: int = 50  # linear ramp from ~0 to lr (Adam's early updates are noisy)
    weight_decay: float = 0.1  # AdamW decay, applied to Linear weight matrices (and the embeddings, if below)
    decay_embeddings: bool = False  # decay the embedding tables too (Nanda et al. decay every parameter)
    grad_clip: float = 1.0  # clip the global gradient norm to this; 0 turns clipping off
    betas: tuple = (0.9, 0.99)  # AdamW momentum terms; 0.99 suits small batches of a tiny model
    eval_interval: int = 200  # estimate train/val loss every N steps (and at start and end); 0: never
    eval_iters: int = 10  # batches averaged per loss estimate
    snapshot_interval: int = 100  # snapshot attention + embeddings every N steps (and start, end); 0: never
    seed: int = 1337  # seeds batch sampling and dropout; same seed on CPU, same losses
    device: str = "auto"  # auto picks cuda, then mps, then cpu
    probe_text: Optional[str] = None  # fixed prompt for snapshots; None: start of the validation text
    optimizer: str = "adamw"  # adamw for everything | muon for the blocks' matrices, AdamW (lr) for the rest
    muon_lr: float = 0.02  # Muon's peak learning rate (optimizer='muon' only); follows the same schedule
    muon_momentum: float = 0.95  # Muon's (Nesterov) momentum
    muon_ns_steps: int = 5  # Newton-Schulz iterations that orthogonalise each update (torch's default; 3 is cheaper)
    precision: str = "fp32"  # fp32 | bf16 (autocast: matmuls in bfloat16, weights and optimiser in fp32)
    compile: bool = False  # torch.compile the training forward pass (CUDA only: worth it on GPUs)
    # the algorithmic task trained on (model_core.data.tasks: its name, settings and prompt format); None: a text
    task: Optional[dict] = None
    measure_progress: bool = True  # add progress measures to every evaluation (model_core.analysis.progress)

    def __post_init__(self):
        self.betas = tuple(self.betas)
        self.validate()

    @property
    def final_lr(self) -> float:
        return self.lr / 10 if self.min_lr is None else self.min_lr

    def validate(self) -> None:
        """Raise TrainConfigError naming the first invalid field and how to fix it."""
        for name in ("max_steps", "batch_size", "eval_iters"):
            _check_int(name, getattr(self, name), minimum=1)
        for name in ("warmup_steps", "eval_interval", "snapshot_interval", "seed"):
            _check_int(name, getattr(self, name), minimum=0)
        if not _is_number(self.lr) or not 0 < self.lr <= 10:
            raise TrainConfigError(f"lr must be a positive number, got {self.lr!r}: 1e-3 to 1e-2 suits tiny models.")
        if self.min_lr is not None and (not _is_number(self.min_lr) or not 0 <= self.min_lr <= self.lr):
            raise TrainConfigError(f"min_lr must be between 0 and lr ({self.lr}), got {self.min_lr!r}: try lr / 10.")
        if not _is_number(self.weight_decay) or self.weight_decay < 0:
            raise TrainConfigError(f"weight_decay must be 0 or more, got {self.weight_decay!r}: 0.1 is usual.")
        if not _is_number(self.grad_clip) or self.grad_clip < 0:
            raise TrainConfigError(f"grad_clip must be 0 (off) or more, got {self.grad_clip!r}: 1.0 is usual.")
        if len(self.betas) != 2 or not all(_is_number(b) and 0 <= b < 1 for b in self.betas):
            raise TrainConfigError(f"betas must be two numbers in [0, 1), got {self.betas!r}: try (0.9, 0.99).")
        if self.device not in DEVICES:
            raise TrainConfigError(f"device must be one of {', '.join(DEVICES)}; got {self.device!r}.")
        if self.optimizer not in OPTIMIZERS:
            raise TrainConfigError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {self.optimizer!r}.")
        if not _is_number(self.muon_lr) or not 0 < self.muon_lr <= 10:
            raise TrainConfigError(f"muon_lr must be a positive number, got {self.muon_lr!r}: 0.01 to 0.05 is usual.")
        if not _is_number(self.muon_momentum) or not 0 <= self.muon_momentum < 1:
            raise TrainConfigError(f"muon_momentum must be in [0, 1), got {self.muon_momentum!r}: 0.95 is usual.")
        if isinstance(self.muon_ns_steps, bool) or not isinstance(self.muon_ns_steps, int) \
                or not 1 <= self.muon_ns_steps <= MAX_NS_STEPS:
            raise TrainConfigError(f"muon_ns_steps must be a whole number from 1 to {MAX_NS_STEPS}, got "
                                   f"{self.muon_ns_steps!r}: 5 is torch's default, 3 is cheaper and trains as well here.")
        if self.precision not in PRECISIONS:
            raise TrainConfigError(f"precision must be one of {', '.join(PRECISIONS)}; got {self.precision!r}.")
        if not isinstance(self.decay_embeddings, bool):
            raise TrainConfigError(f"decay_embeddings must be true or false, got {self.decay_embeddings!r}.")
        if not isinstance(self.compile, bool):
            raise TrainConfigError(f"compile must be true or false, got {self.compile!r}.")
        if not isinstance(self.measure_progress, bool):
            raise TrainConfigError(f"measure_progress must be true or false, got {self.measure_progress!r}.")
        if self.task is not None and not isinstance(self.task, dict):
            raise TrainConfigError(f"task must be a task spec (a dict, model_core.data.tasks) or None, got "
                                   f"{type(self.task).__name__}.")
        if self.probe_text is not None and not isinstance(self.probe_text, str):
            raise TrainConfigError(f"probe_text must be text or None, got {type(self.probe_text).__name__}.")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        """Rebuild from a plain dict; unknown keys are an error, not silently dropped."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise TrainConfigError(f"unknown training config keys {unknown}; known keys are {sorted(known)}.")
        return cls(**d)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "a positive whole number" if minimum == 1 else "a whole number >= 0"
        raise TrainConfigError(f"{name} must be {kind}, got {value!r}.")
