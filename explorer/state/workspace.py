"""A student's workspace: the data they prepared, their runs and the Experiments tab's model B (everything they
made besides the inspected model, which is explorer.state.inspected's)."""
from dataclasses import dataclass
from typing import Optional

import torch

from explorer.state.training_run import TrainingRun
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.data.tokenization import tokenizer_bytes
from model_core.training.run_protocol import Command


@dataclass
class DataChoice:
    """What the Data tab prepared for training (the text itself is not kept: only its first lines)."""

    name: str  # corpus name or uploaded file name
    sample: str  # the first characters, for display
    n_chars: int
    tokenizer: object
    train: torch.Tensor  # token ids, int16/int32 (model_core.data.compact)
    val: torch.Tensor
    uploaded: bool = False  # the user's own file (kept until they choose again), not a built-in corpus
    task: Optional[dict] = None  # an algorithmic task's spec (model_core.data.tasks); train/val are its data

    @property
    def nbytes(self) -> int:
        """The token ids and the tokenizer (a word vocabulary of 65,536 words keeps ~9 MB)."""
        return self.train.nbytes + self.val.nbytes + tokenizer_bytes(self.tokenizer)


@dataclass
class SecondModel:
    """The Experiments tab's model B, compared with the inspected model."""

    checkpoint: Checkpoint
    name: str


@dataclass
class PreviousRun:
    """What the Train tab's charts keep of the run before the current one, drawn faded beside it for comparison:
    its evaluations only (thinned to a few hundred rows), never its model, snapshots or per-step losses."""

    label: str  # the legend's name for it, with the settings it differed in: "previous run (weight decay 2.0)"
    evals: list  # its evaluation rows ({step, train_loss, val_loss, progress measures...})
    has_val: bool  # evaluated on a validation split (else its train_loss is the training text's)

    @property
    def last_step(self) -> int:
        return self.evals[-1]["step"] if self.evals else 0


@dataclass
class StatusNote:
    """The sentence of a refused or failed Train-tab action, shown in the status line until the next action; one
    written while a run was going (Start refused) goes when that run ends, since it no longer holds."""

    text: str
    going: Optional[TrainingRun] = None  # the run that was going when it was written

    @property
    def shown(self) -> bool:
        return self.going is None or self.going.active


@dataclass
class Workspace:
    data: Optional[DataChoice] = None
    run: Optional[TrainingRun] = None
    previous: Optional[PreviousRun] = None  # the run before `run` (one at most: each new run replaces it)
    note: Optional[StatusNote] = None  # the Train tab's last refusal, until its next action
    sae_run: Optional[TrainingRun] = None  # an SAE training on the Features tab (its own run, in a training slot)
    transcoder_run: Optional[TrainingRun] = None  # transcoders training on the Graph tab (a run of their own too)
    model_b: Optional[SecondModel] = None  # Experiments tab
    counted_at: float = 0.0  # the page's stamp of the newest Train-tab parameter count answered (newest_param_count)

    def stop_training(self) -> None:
        for run in (self.run, self.sae_run, self.transcoder_run):
            if run is not None and run.active:
                run.control(Command.STOP)

    @property
    def going_run(self) -> Optional[TrainingRun]:
        """The run that is going (training, paused, or finishing after a stop), if any."""
        return self.run if self.run is not None and self.run.active else None

    @property
    def holds_paused_run(self) -> bool:
        return self.run is not None and self.run.active and self.run.progress.requested == "paused"
