"""Copy, reverse, sort: a sequence of n symbols, a separator, then the answer, scored on the answer only.
"3 1 4 1 | 1 1 3 4" (sort). Training and test sequences are disjoint sets of random sequences."""
from dataclasses import dataclass

import torch

from model_core.data.tasks.examples import TaskError, int_setting, stack_examples
from model_core.data.tokenization import WordTokenizer

SEPARATOR = "|"
RULES = {"copy": "the same symbols", "reverse": "the symbols in reverse order", "sort": "the symbols sorted"}


@dataclass(frozen=True)
class SequenceTask:
    name: str  # copy | reverse | sort
    length: int = 6  # symbols per sequence
    symbols: int = 10  # distinct symbols (the words "0".."9" for 10)
    n_train: int = 4000  # training sequences
    n_test: int = 1000  # test sequences (none of them a training one)
    seed: int = 0

    @classmethod
    def from_spec(cls, spec: dict) -> "SequenceTask":
        if spec.get("name") not in RULES:
            raise TaskError(f"a sequence task is one of {', '.join(RULES)}, got {spec.get('name')!r}.")
        return cls(spec["name"], int_setting(spec, "length", 6, 2, 32), int_setting(spec, "symbols", 10, 2, 100),
                   int_setting(spec, "n_train", 4000, 1, 100_000), int_setting(spec, "n_test", 1000, 1, 100_000),
                   int_setting(spec, "seed", 0, 0, 2**31 - 1))

    def spec(self) -> dict:
        return {"name": self.name, "length": self.length, "symbols": self.symbols, "n_train": self.n_train,
                "n_test": self.n_test, "seed": self.seed, "prompt": "{symbols} |", "answer": "{result}",
                "rule": RULES[self.name]}

    def tokenizer(self) -> WordTokenizer:
        return WordTokenizer([str(i) for i in range(self.symbols)] + [SEPARATOR])

    @property
    def block_size(self) -> int:
        return 2 * self.length  # n symbols, the separator, n - 1 answer symbols as input

    def answer(self, seqs: torch.Tensor) -> torch.Tensor:
        if self.name == "copy":
            return seqs
        if self.name == "reverse":
            return seqs.flip(1)
        return seqs.sort(dim=1).values

    def sequences(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(train [n_train, n], test [n_test, n]) distinct random sequences, no test one among the training ones."""
        total = self.n_train + self.n_test
        if self.symbols ** self.length < 2 * total:
            raise TaskError(f"{self.symbols} symbols make only {self.symbols ** self.length} sequences of length "
                            f"{self.length}: fewer train and test sequences, or longer ones.")
        g = torch.Generator().manual_seed(self.seed)
        seqs = torch.randint(self.symbols, (3 * total, self.length), generator=g)
        seqs = torch.unique(seqs, dim=0)  # sorted and distinct
        seqs = seqs[torch.randperm(len(seqs), generator=g)][:total]
        if len(seqs) < total:
            raise TaskError("not enough distinct sequences were drawn: ask for fewer.")
        return seqs[:self.n_train], seqs[self.n_train:]

    def examples(self, seqs: torch.Tensor) -> torch.Tensor:
        full = torch.cat([seqs, torch.full((len(seqs), 1), self.symbols), self.answer(seqs)], dim=1)  # (N, 2n+1)
        targets = full[:, 1:].clone()
        targets[:, : self.length] = -1  # the question is not predicted, only the answer
        return stack_examples(full[:, :-1], targets)

    def splits(self) -> tuple[torch.Tensor, torch.Tensor]:
        train, test = self.sequences()
        return self.examples(train), self.examples(test)
