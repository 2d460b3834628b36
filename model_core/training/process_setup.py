"""Operating-system set-up of a training child: priority, threads, allocator, and dying with its parent."""
import ctypes
import os
import signal
from pathlib import Path

import torch

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def prepare_child(nice: int, threads: int) -> None:
    """Run at the start of a training child, before any torch op."""
    die_with_parent()
    if nice:
        os.nice(nice)
    if threads:
        torch.set_num_threads(threads)
    warm_allocator()


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the process that forked it (the forkserver) exits; the
    forkserver itself exits when the app does. Elsewhere this is a no-op, and the child's watchdog
    (model_core.training.child.obey) still notices a parent that has gone."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def warm_allocator() -> None:
    """glibc serves allocations over 128 kB with mmap and gives each one back to the kernel when it is freed,
    so every step page-faults its activations in again, until freeing one big mmapped block raises that
    threshold (up to 32 MB) for good. A long-lived process (the CLI, after reading its corpus) gets there by
    itself; a fresh child gets there now, by allocating and freeing 16 MB. Worth 3-6 % of training speed."""
    block = bytearray(16 << 20)
    del block


def process_alive(pid: int) -> bool:
    """Whether pid runs: an exited process its parent has not reaped yet (a zombie) counts as gone, so a child
    watching it ends even while that parent waits on the child's output."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return not zombie(pid)


def zombie(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False
