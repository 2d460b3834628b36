"""Inspect a freshly initialised model: the Train tab's architecture, random weights, no training (seed 003's
walk-through looks at an untrained model on "Welcome to the world of AI")."""
import torch

from explorer.callbacks.model_size import CLASSROOM_HINT, count_params
from explorer.callbacks.models import model_summary
from explorer.callbacks.train import model_config, prepare_controls_data
from explorer.common.controls import ARCH_FIELDS, DEFAULT_VAL_SPLIT
from explorer.common.errors import UserError
from explorer.common.limits import LIMITS
from explorer.state.session import Session
from model_core import GPT
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.training.train_config import TrainConfig

INIT_SEED = TrainConfig().seed  # the seed a training run initialises with: Start begins from these weights


def use_untrained_model(session: Session, corpus: str, kind: str, bpe_vocab, *values) -> str:
    """Build the model the architecture controls describe (for the prepared data's tokenizer) with random
    weights and inspect it on every tab. values: the ARCH_FIELDS, then (optionally) the validation split."""
    prepare_controls_data(session, corpus, kind, bpe_vocab, (values[len(ARCH_FIELDS):] or (DEFAULT_VAL_SPLIT,))[0])
    cfg = model_config(session, dict(zip(ARCH_FIELDS, values)))
    n_params = count_params(cfg)
    if n_params > LIMITS.max_params:
        raise UserError(f"This model has {n_params:,} parameters; this server keeps models of at most "
                        f"{LIMITS.max_params:,}. {CLASSROOM_HINT}")
    torch.manual_seed(INIT_SEED)
    model = GPT(cfg)
    d = session.workspace.data
    session.inspected.use(Checkpoint(model, d.tokenizer, corpus=d.name), f"untrained (random weights) for {d.name}",
                          untrained=True)
    return model_summary(session)
