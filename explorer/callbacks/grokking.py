"""The grokking lab: a modular-addition model taken apart in the Fourier basis (Nanda et al. 2023), on the
inspected model when it was trained on the task, or on the shipped 'grokking' model."""
import numpy as np
import torch

from explorer.callbacks import validation
from explorer.callbacks.models import model_summary
from explorer.common.errors import UserError
from explorer.common.shipped_list import shipped_models
from explorer.figures.grokking import (
    accuracy_figure,
    frequency_norms_figure,
    logit_fourier_figure,
    neuron_map_figure,
    phase_curves_figure,
)
from explorer.state.session import Session, require_model
from explorer.teaching import captions_grokking
from model_core.analysis.fourier import GrokkingLab, fourier_basis, grokking_lab
from model_core.data.tasks.registry import TaskError, make_task

SHIPPED = "grokking"
NOT_A_GROKKING_MODEL = ("The inspected model was not trained on modular addition. Open the shipped grokking model "
                        "(the button above), or train the 'grokking' preset on the Train tab and pause or let it "
                        "finish.")
LOGIT_ROWS = 24  # Fourier basis rows of a and of b drawn in the logits chart


def modular_task(session: Session):
    """The modular-addition task the inspected model was trained on, or a UserError saying what to do."""
    cfg = session.inspected.checkpoint.train_config
    spec = getattr(cfg, "task", None)
    if not spec or spec.get("name") != "modular-addition":
        raise UserError(NOT_A_GROKKING_MODEL)
    try:
        task = make_task(spec)
    except TaskError as err:
        raise UserError(f"This model's task settings are damaged ({err}).") from None
    model_cfg = session.inspected.model.cfg
    if model_cfg.vocab_size != task.p + 1 or model_cfg.block_size < 3:
        raise UserError(f"The model does not fit its task: a + b mod {task.p} needs {task.p + 1} tokens and a "
                        f"block of 3, the model has {model_cfg.vocab_size} and {model_cfg.block_size}.")
    return task


def open_shipped_grokking(session: Session) -> str:
    """Inspect the shipped grokking model; -> the model line."""
    if SHIPPED not in shipped_models():
        raise UserError("This installation has no shipped grokking model (python -m model_core.make_grokking_asset "
                        "makes it): train the 'grokking' preset on the Train tab instead.")
    session.inspected.use_shipped(SHIPPED)
    return model_summary(session)


def lab_of(session: Session) -> GrokkingLab:
    """Everything the lab measures on the inspected model, or a UserError when it was not trained on the task."""
    task = modular_task(session)
    return grokking_lab(session.inspected.model, task.p, task.train_mask())


def grokking_view(session: Session, neuron=None):
    """-> embedding frequency figure, neuron map figure, logits' Fourier figure, phase curves figure, accuracy
    figure, caption markdown."""
    require_model(session)
    lab = lab_of(session)
    n_neurons = lab.neurons.shape[-1]
    if n_neurons:
        default = int(np.argmax(lab.neurons.reshape(-1, n_neurons).var(0)))
        neuron = validation.whole_number(neuron, "Neuron", minimum=0, maximum=n_neurons - 1, default=default)
        neuron_fig = neuron_map_figure(lab.neurons[:, :, neuron], neuron, int(lab.neuron_frequency[neuron]))
    else:
        neuron, neuron_fig = None, None
    _, labels = fourier_basis(lab.p)
    steps, curves, accuracy, phases = training_curves(session.inspected.checkpoint.evals)
    caption = captions_grokking.lab_caption(lab, neuron, phases, lab.p, labels, LOGIT_ROWS)
    return (frequency_norms_figure(lab.embedding_norms, lab.key_frequencies), neuron_fig,
            logit_fourier_figure(lab.logit_fourier, labels, LOGIT_ROWS), phase_curves_figure(steps, curves, phases) if steps else None,
            accuracy_figure(steps, *accuracy) if steps else None, caption)


def training_curves(evals: list[dict]):
    """(steps, {curve: values}, (train acc, test acc), phases) from the checkpoint's evaluations."""
    rows = [e for e in evals if e.get("train_acc") is not None]
    if not rows:
        return [], {}, ([], []), []
    steps = [e["step"] for e in rows]
    names = {"train_loss": "train loss", "val_loss": "test loss", "restricted_loss": "restricted loss",
             "excluded_loss": "excluded loss"}
    curves = {title: [np.nan if e.get(key) is None else e[key] for e in rows] for key, title in names.items()
              if any(e.get(key) is not None for e in rows)}
    train_acc = [e["train_acc"] for e in rows]
    test_acc = [e.get("val_acc", np.nan) for e in rows]
    return steps, curves, (train_acc, test_acc), captions_grokking.phases(steps, train_acc, test_acc)


def pair_accuracy(model, p: int) -> torch.Tensor:
    """[p, p] bool: is the model right on a + b mod p (a-major)? (used by tests and the lesson's numbers)"""
    from model_core.analysis.fourier import all_pair_run

    logits, _ = all_pair_run(model, p)
    labels = (torch.arange(p).repeat_interleave(p) + torch.arange(p).repeat(p)) % p
    return (logits.argmax(-1) == labels).reshape(p, p)
