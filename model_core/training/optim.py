"""Optimisers for the Trainer: AdamW alone, or Muon for the blocks' hidden matrices plus AdamW for the rest.

Every parameter group carries "base_lr", its own peak learning rate; the trainer's schedule scales all
groups by the same factor, so warmup and cosine decay shape each group alike."""
import torch

from model_core.training.train_config import TrainConfig, TrainConfigError

MIN_MUON_SIDE = 2  # Muon orthogonalises a matrix; a 1-row or 1-column "matrix" is a vector in disguise


def embedding_ids(model: torch.nn.Module) -> set:
    return {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}


def decayed_ids(model: torch.nn.Module, embeddings: bool = False) -> set:
    """Weight matrices of Linear layers that are not an (embedding-tied) unembedding; with embeddings, the
    embedding tables too (then a tied unembedding is decayed as the embedding it is)."""
    tied = embedding_ids(model)
    linear = {id(m.weight) for m in model.modules()
              if isinstance(m, torch.nn.Linear) and m.weight.dim() == 2 and id(m.weight) not in tied}
    return linear | tied if embeddings else linear


def hidden_matrices(model: torch.nn.Module) -> list:
    """The 2-D weights of the Linear layers inside model.blocks (attention and FFN), at least 2 x 2:
    the matrices Muon is made for. Embeddings and the unembedding live outside the blocks."""
    blocks = getattr(model, "blocks", None)
    if blocks is None:
        return []
    return [m.weight for m in blocks.modules() if isinstance(m, torch.nn.Linear) and m.weight.requires_grad
            and m.weight.dim() == 2 and min(m.weight.shape) >= MIN_MUON_SIDE]


def adamw_groups(params: list, decay: set, weight_decay: float, lr: float) -> list[dict]:
    """[decayed group, undecayed group]: decay only the ids in decay."""
    return [
        {"params": [p for p in params if id(p) in decay], "weight_decay": weight_decay, "base_lr": lr, "lr": lr},
        {"params": [p for p in params if id(p) not in decay], "weight_decay": 0.0, "base_lr": lr, "lr": lr},
    ]


def param_groups(model: torch.nn.Module, weight_decay: float, lr: float = 1e-3,
                 decay_embeddings: bool = False) -> list[dict]:
    """AdamW groups: decay only the weight matrices of Linear layers, and the embeddings if decay_embeddings;
    otherwise embeddings (also when the unembedding is tied to them), norms and biases get none. Each parameter
    appears once."""
    params = [p for p in model.parameters() if p.requires_grad]  # parameters() lists a tied tensor once
    return adamw_groups(params, decayed_ids(model, decay_embeddings), weight_decay, lr)


def make_adamw(groups: list[dict], cfg: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW, the fused kernel where this torch and device have it, else the foreach one."""
    try:
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, foreach=device.type != "mps")


class CombinedOptimizer:
    """Several optimisers stepped together, seen as one (param_groups, step, zero_grad, state_dict)."""

    def __init__(self, *optimizers: torch.optim.Optimizer):
        self.optimizers = optimizers

    @property
    def param_groups(self) -> list[dict]:
        return [g for opt in self.optimizers for g in opt.param_groups]

    def step(self) -> None:
        for opt in self.optimizers:
            opt.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> list[dict]:
        return [opt.state_dict() for opt in self.optimizers]

    def load_state_dict(self, states: list[dict]) -> None:
        for opt, state in zip(self.optimizers, states):
            opt.load_state_dict(state)


def check_muon_fits(model: torch.nn.Module) -> list:
    """The hidden matrices Muon would train; TrainConfigError when the model has none."""
    hidden = hidden_matrices(model)
    if not hidden:
        raise TrainConfigError(
            "optimizer 'muon' trains the 2-D weight matrices inside the transformer blocks, but this model has "
            f"none at least {MIN_MUON_SIDE} x {MIN_MUON_SIDE} (they are all 1-D or too narrow): use optimizer "
            "'adamw', or give the model a d_model of 2 or more."
        )
    return hidden


def make_muon(model: torch.nn.Module, cfg: TrainConfig, device: torch.device) -> CombinedOptimizer:
    """Muon (Keller Jordan's lr scaling) on the hidden matrices, AdamW at cfg.lr on everything else."""
    hidden = check_muon_fits(model)
    hidden_ids = {id(p) for p in hidden}
    rest = [p for p in model.parameters() if p.requires_grad and id(p) not in hidden_ids]
    muon = torch.optim.Muon([{"params": hidden, "base_lr": cfg.muon_lr, "lr": cfg.muon_lr}], lr=cfg.muon_lr,
                            weight_decay=cfg.weight_decay, momentum=cfg.muon_momentum, ns_steps=cfg.muon_ns_steps,
                            adjust_lr_fn="original")
    # What AdamW still trains (embeddings, unembedding, norms, biases) is decayed as in param_groups: an untied
    # unembedding matrix, and the embeddings if cfg.decay_embeddings.
    decay = decayed_ids(model, cfg.decay_embeddings)
    groups = [g for g in adamw_groups(rest, decay, cfg.weight_decay, cfg.lr) if g["params"]]
    adamw = make_adamw(groups, cfg, device)
    return CombinedOptimizer(muon, adamw)


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig, device: torch.device):
    """The optimiser cfg.optimizer names, its groups tagged with their peak learning rate (base_lr)."""
    if cfg.optimizer == "muon":
        return make_muon(model, cfg, device)
    return make_adamw(param_groups(model, cfg.weight_decay, cfg.lr, cfg.decay_embeddings), cfg, device)
