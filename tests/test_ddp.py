"""Two CPU processes (gloo, DDP) train exactly what one process trains on the same global batch."""
import json
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from model_core import train as train_cli
from model_core.checkpoints.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from tests.trainer_helpers import tiny_trainer

STEPS, BATCH = 6, 8
# Gradients are averaged over 2 slices instead of one batch: the same sum in another order, so the
# losses agree to float32 rounding (~1e-6 here). Adam divides by sqrt(v), which magnifies that rounding
# for parameters whose gradient is near 0 (biases): weights agree to 1e-4, 1% of one lr-sized step.
TOLERANCE, WEIGHT_TOLERANCE = 1e-5, 1e-4


def ddp_worker(rank: int, world_size: int, tmp: str) -> None:
    """One torchrun-like process: join the group, train, rank 0 writes losses and a checkpoint."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=world_size)
    try:
        # Different initial weights on rank 1: DDP must start every rank from rank 0's.
        trainer = tiny_trainer(init_seed=rank * 100, max_steps=STEPS, batch_size=BATCH)
        trainer.run()
        losses = [m["loss"] for m in trainer.history]
        with open(f"{tmp}/losses-{rank}.json", "w") as f:
            json.dump(losses, f)
        if rank == 0:
            save_checkpoint(Checkpoint.from_trainer(trainer), f"{tmp}/ckpt")
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_gloo_processes_match_one_process(tmp_path):
    mp.spawn(ddp_worker, args=(2, str(tmp_path)), nprocs=2, join=True)
    single = tiny_trainer(init_seed=0, max_steps=STEPS, batch_size=BATCH)
    single.run()
    expected = [m["loss"] for m in single.history]
    for rank in (0, 1):  # every rank reports the loss of the whole global batch
        losses = json.loads((tmp_path / f"losses-{rank}.json").read_text())
        assert losses == pytest.approx(expected, abs=TOLERANCE)
    ckpt = load_checkpoint(tmp_path / "ckpt")  # the usual format, the usual loader
    assert len(ckpt.history) == STEPS and ckpt.evals == []  # eval_interval 0 in the helper
    for name, tensor in single.model.state_dict().items():
        torch.testing.assert_close(ckpt.model.state_dict()[name], tensor, atol=WEIGHT_TOLERANCE, rtol=0)


def test_a_batch_that_does_not_split_over_the_processes_is_refused_before_training(monkeypatch, capsys):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    code = train_cli.main(["--corpus", "first-names", "--preset", "tiny", "--batch-size", "7", "--max-steps", "1"])
    assert code == 1
    err = capsys.readouterr().err
    assert "batch_size 7 does not split evenly over 2 processes: use a multiple of 2, e.g. 6 or 8" in err
    assert not dist.is_initialized()
    assert "WORLD_SIZE" in os.environ  # (monkeypatch restores it afterwards)
