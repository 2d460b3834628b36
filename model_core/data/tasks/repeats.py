"""Repeated random tokens, the data on which induction heads form fastest: a stream of random tokens cut into
segments of random length, each shown `copies` times in a row. Nothing predicts a segment's first showing
(its loss stays at log(vocab)); a repeat is predictable only by looking back at what followed the same token last
time, which is what an induction head does."""
from dataclasses import dataclass

import torch

from model_core.data.tasks.examples import TaskError, int_setting
from model_core.data.tokenization import WordTokenizer


@dataclass(frozen=True)
class RepeatedTokens:
    vocab: int = 64  # distinct random tokens (the words "t0".."t63")
    min_length: int = 8  # shortest segment
    max_length: int = 24  # longest segment
    n_tokens: int = 400_000  # length of the stream (train and validation)
    seed: int = 0
    copies: int = 2  # times each segment is shown in a row (the first showing is unpredictable)
    name: str = "repeated-tokens"

    @classmethod
    def from_spec(cls, spec: dict) -> "RepeatedTokens":
        low = int_setting(spec, "min_length", 8, 1, 512)
        task = cls(int_setting(spec, "vocab", 64, 2, 4096), low, int_setting(spec, "max_length", 24, low, 512),
                   int_setting(spec, "n_tokens", 400_000, 1000, 5_000_000), int_setting(spec, "seed", 0, 0, 2**31 - 1),
                   int_setting(spec, "copies", 2, 2, 16))
        return task

    def spec(self) -> dict:
        return {"name": self.name, "vocab": self.vocab, "min_length": self.min_length, "max_length": self.max_length,
                "n_tokens": self.n_tokens, "seed": self.seed, "copies": self.copies,
                "prompt": " ".join(["{segment}"] * self.copies), "answer": "",
                "rule": f"random segments, each shown {self.copies} times in a row"}

    def tokenizer(self) -> WordTokenizer:
        return WordTokenizer([f"t{i}" for i in range(self.vocab)])

    def stream(self) -> torch.Tensor:
        """[n_tokens] int64: segment shown `copies` times, the next segment `copies` times, ..."""
        g = torch.Generator().manual_seed(self.seed)
        n_segments = self.n_tokens // (self.copies * self.min_length) + 1
        lengths = torch.randint(self.min_length, self.max_length + 1, (n_segments,), generator=g)
        segments = torch.randint(self.vocab, (int(lengths.sum()),), generator=g).split(lengths.tolist())
        return torch.cat([segment.repeat(self.copies) for segment in segments])[: self.n_tokens]

    def splits(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(train, validation): the first 90 % and the last 10 % of the stream."""
        ids = self.stream()
        if len(ids) < 20:
            raise TaskError("the stream is too short to split.")
        n = int(len(ids) * 0.9)
        return ids[:n], ids[n:]
