"""Token tensors, the train/validation split, and random training windows."""
import torch


class DataError(ValueError):
    """The token data cannot feed training as configured; the message says how to fix it."""


def token_tensor(ids: list[int]) -> torch.Tensor:
    """Token ids as a 1-D int64 tensor (what nn.Embedding and cross_entropy expect)."""
    return torch.tensor(ids, dtype=torch.long)


def compact(data: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """The same ids in the smallest dtype that holds them (int16 for vocabularies up to 32,767): a kept
    corpus costs 2 bytes a token instead of 8."""
    return data.to(torch.int16 if vocab_size <= 32_767 else torch.int32)


def train_val_split(data: torch.Tensor, train_fraction: float = 0.9) -> tuple[torch.Tensor, torch.Tensor]:
    """First train_fraction of the tokens for training, the rest for validation (contiguous, not shuffled,
    so validation text is text the model has never seen, not neighbours of training windows)."""
    if not 0.0 < train_fraction < 1.0:
        raise DataError(f"train_fraction must be between 0 and 1 (exclusive), got {train_fraction!r}: 0.9 is usual.")
    n = int(len(data) * train_fraction)
    return data[:n], data[n:]


def check_long_enough(data: torch.Tensor, block_size: int, split: str) -> None:
    """DataError unless data holds at least one window of block_size inputs plus its next-token target."""
    if len(data) < block_size + 1:
        raise DataError(
            f"the {split} split has {len(data)} tokens but one training window needs {block_size + 1} "
            f"(block_size + 1): use more text or a smaller block size (at most {max(len(data) - 1, 0)})."
        )


def get_batch(data: torch.Tensor, block_size: int, batch_size: int, generator: torch.Generator):
    """batch_size random windows: x (B, T) and y (B, T), where y is x shifted left by one token."""
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)  # (B,)
    index = starts.unsqueeze(1) + torch.arange(block_size)  # (B, T)
    return data[index].long(), data[index + 1].long()  # both contiguous (B, T); data may be a compact dtype
