"""Example data: each example an input row and a target row, stacked as [N, 2, T] (target -1: not scored)."""
import torch


class TaskError(ValueError):
    """A task setting is invalid; the message says what and how to fix it."""


def is_examples(data: torch.Tensor) -> bool:
    """True for example data [N, 2, T], False for a token stream [n]."""
    return data.dim() == 3


def stack_examples(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """inputs [N, T] and targets [N, T] (-1 where nothing is predicted) -> examples [N, 2, T] int64."""
    return torch.stack([inputs.long(), targets.long()], dim=1)


def example_parts(x: list[int], y: list[int]) -> tuple[list[int], list[int]]:
    """An example's input and target rows -> (its prompt, its answer) as token ids: the whole example."""
    scored = [i for i, t in enumerate(y) if t >= 0]
    return x[: scored[0] + 1], [y[i] for i in scored]


def example_line(label, prompt: list[int], answer: list[int]) -> str:
    """'12 40 = → 52': an example as the Data tab shows it (label: token id -> its text)."""
    return f"{' '.join(label(t) for t in prompt)} → {' '.join(label(t) for t in answer)}"


def example_batch(data: torch.Tensor, batch_size: int, generator: torch.Generator):
    """x (B, T) and y (B, T) from example data [N, 2, T]: every example in order when batch_size >= N (a full
    batch, as in Nanda et al.), else batch_size examples drawn at random."""
    if batch_size >= len(data):
        return data[:, 0], data[:, 1]
    rows = torch.randint(len(data), (batch_size,), generator=generator)  # (B,)
    return data[rows, 0], data[rows, 1]


def int_setting(spec: dict, name: str, default: int, low: int, high: int) -> int:
    value = spec.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise TaskError(f"the task's {name} must be a whole number from {low} to {high}, got {value!r}.")
    return value


def fraction_setting(spec: dict, name: str, default: float) -> float:
    value = spec.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise TaskError(f"the task's {name} must be a number between 0 and 1, got {value!r}: 0.3 is Nanda et al.'s.")
    return float(value)
