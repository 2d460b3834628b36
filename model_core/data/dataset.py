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


DEFAULT_VAL_FRACTION = 0.1  # share of the tokens held out for validation (seed 000: 90% train, 10% val)


def train_val_split(data: torch.Tensor, train_fraction: float = 0.9) -> tuple[torch.Tensor, torch.Tensor]:
    """First train_fraction of the tokens for training, the rest for validation (contiguous, not shuffled,
    so validation text is text the model has never seen, not neighbours of training windows).
    train_fraction 1.0 keeps every token for training: the validation split comes back empty."""
    if not 0.0 < train_fraction <= 1.0:
        raise DataError(f"train_fraction must be between 0 and 1 (above 0, at most 1), got {train_fraction!r}: "
                        "0.9 is usual.")
    n = int(len(data) * train_fraction)
    return data[:n], data[n:]


def split_by_val_fraction(data: torch.Tensor, val_fraction: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, val) with the last val_fraction of the tokens held out; 0 holds out nothing (val is empty and
    the model is evaluated on its training text: the only choice for a one-sentence corpus)."""
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, (int, float)) or not 0 <= val_fraction <= 0.5:
        raise DataError(f"the validation fraction must be from 0 (no validation split) to 0.5, got "
                        f"{val_fraction!r}: 0.1 is usual, 0 for a tiny corpus.")
    return train_val_split(data, 1.0 - val_fraction)


def val_or_none(val: torch.Tensor):
    """The validation tokens, or None when there are none (the Trainer then evaluates the training text)."""
    return val if len(val) else None


def check_long_enough(data: torch.Tensor, block_size: int, split: str) -> None:
    """DataError unless data holds at least one window of block_size inputs plus its next-token target (a token
    stream), or examples no longer than block_size (example data [N, 2, T], model_core.data.tasks)."""
    if data.dim() == 3:
        if len(data) == 0 or data.shape[2] > block_size:
            raise DataError(f"the {split} examples ({len(data)} of {data.shape[2]} tokens) need a block size of at "
                            f"least {data.shape[2]} and at least one example; this model's block size is {block_size}.")
        return
    if len(data) < block_size + 1:
        hint = (", or evaluate on the training text with no validation split (--val-fraction 0; in the app: "
                "Validation split 'none')") if split == "validation" else ""
        raise DataError(
            f"the {split} split has {len(data)} tokens but one training window needs {block_size + 1} "
            f"(block_size + 1): use more text or a smaller block size (at most {max(len(data) - 1, 0)}){hint}."
        )


def get_batch(data: torch.Tensor, block_size: int, batch_size: int, generator: torch.Generator):
    """batch_size random windows: x (B, T) and y (B, T), where y is x shifted left by one token. Example data
    [N, 2, T] (an algorithmic task) gives its examples instead: x the inputs, y the targets (-1: not scored)."""
    if data.dim() == 3:
        from model_core.data.tasks.examples import example_batch

        return example_batch(data, batch_size, generator)
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)  # (B,)
    index = starts.unsqueeze(1) + torch.arange(block_size)  # (B, T)
    return data[index].long(), data[index + 1].long()  # both contiguous (B, T); data may be a compact dtype
