"""Train/val split and random batches."""
import pytest
import torch

from model_core.data.dataset import DataError, check_long_enough, get_batch, token_tensor, train_val_split


def test_split_is_contiguous_and_long():
    data = token_tensor(list(range(100)))
    assert data.dtype == torch.long
    train, val = train_val_split(data)
    assert train.tolist() == list(range(90)) and val.tolist() == list(range(90, 100))
    with pytest.raises(DataError, match="between 0 and 1"):
        train_val_split(data, 1.5)


def test_batches_are_shifted_by_one_and_seeded():
    data = token_tensor(list(range(1000)))
    x, y = get_batch(data, block_size=8, batch_size=4, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 8) and x.dtype == torch.long
    assert torch.equal(y, x + 1)  # data[i] == i, so the next token is x + 1
    assert torch.equal(x[:, 1:], x[:, :-1] + 1)  # windows are contiguous
    x2, _ = get_batch(data, block_size=8, batch_size=4, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)
    x3, _ = get_batch(data, block_size=8, batch_size=4, generator=torch.Generator().manual_seed(1))
    assert not torch.equal(x, x3)


def test_windows_reach_the_last_token():
    data = token_tensor(list(range(10)))
    x, y = get_batch(data, block_size=9, batch_size=3, generator=torch.Generator().manual_seed(0))
    assert x.tolist() == [list(range(9))] * 3 and y.tolist() == [list(range(1, 10))] * 3  # the only window


def test_too_short_split_says_how_to_fix():
    with pytest.raises(DataError, match="block size"):
        check_long_enough(token_tensor([1, 2, 3]), block_size=8, split="validation")
