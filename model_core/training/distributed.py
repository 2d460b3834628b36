"""Multi-process data-parallel training (torchrun + DDP): who am I, and what the ranks must agree on.

torchrun sets RANK, WORLD_SIZE and LOCAL_RANK. Every rank draws the same global batch from the same
seeded generator and trains on its own slice, so N processes see exactly the data one process would;
DDP averages the gradients, so the update equals the single-process update on the whole batch."""
import os
from dataclasses import dataclass
from typing import Optional

import torch
import torch.distributed as dist

from model_core.training.train_config import TrainConfigError


@dataclass(frozen=True)
class World:
    rank: int = 0  # this process, 0..size-1; rank 0 logs and writes checkpoints
    size: int = 1  # number of processes
    local_rank: int = 0  # index on this machine (picks the GPU)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def shard(self, batch: torch.Tensor) -> torch.Tensor:
        """This rank's contiguous slice of a global batch (B, ...) -> (B / size, ...)."""
        per_rank = batch.size(0) // self.size
        return batch[self.rank * per_rank:(self.rank + 1) * per_rank]

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """value averaged over all ranks (value itself with one process)."""
        if self.size == 1:
            return value
        value = value.detach().clone()
        dist.all_reduce(value, op=dist.ReduceOp.SUM)
        return value / self.size

    def max(self, values: list[float]) -> list[float]:
        """Element-wise maximum over all ranks: how ranks agree on when to stop and where the clock is."""
        if self.size == 1:
            return values
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()


def world_from_env(env=None) -> World:
    """The World torchrun describes in the environment (one process when it is not set)."""
    env = os.environ if env is None else env
    try:
        return World(int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", 0)))
    except ValueError:
        raise TrainConfigError("RANK, WORLD_SIZE and LOCAL_RANK must be whole numbers: start with torchrun.")


def current_world() -> World:
    """The initialised process group as a World, or a single process."""
    if dist.is_available() and dist.is_initialized():
        return World(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0)))
    return World()


def check_batch_splits(batch_size: int, world: World) -> None:
    """TrainConfigError unless the global batch splits evenly over the processes."""
    if batch_size % world.size:
        lower = batch_size - batch_size % world.size
        raise TrainConfigError(
            f"batch_size {batch_size} does not split evenly over {world.size} processes: use a multiple of "
            f"{world.size}, e.g. {max(lower, world.size)} or {lower + world.size}."
        )


def start_process_group(world: World, cuda: bool) -> None:
    """Join the torchrun job: NCCL between GPUs, gloo between CPU processes. No-op for one process."""
    if world.size == 1 or dist.is_initialized():
        return
    if cuda:
        torch.cuda.set_device(world.local_rank)
    dist.init_process_group(backend="nccl" if cuda else "gloo")


def end_process_group() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def wrap_for_training(model: torch.nn.Module, world: World, device: torch.device) -> torch.nn.Module:
    """DDP around model when there are several processes (it averages gradients in backward)."""
    if world.size == 1:
        return model
    from torch.nn.parallel import DistributedDataParallel

    device_ids: Optional[list] = [device.index] if device.type == "cuda" else None
    # Our buffers (causal mask, rotary and sinusoidal tables) are constants: nothing to broadcast per step.
    return DistributedDataParallel(model, device_ids=device_ids, forward_sync_buffers=False)
