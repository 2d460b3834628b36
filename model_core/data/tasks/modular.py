"""Modular addition (Nanda et al. 2023, "Progress measures for grokking via mechanistic interpretability"):
the prompt "a b =" (three tokens), the answer c = (a + b) mod p at the last position. Tokens 0..p-1 are the
numbers (token i is the word "i"), token p is "=". A fixed random share of the p² pairs is for training; the
rest are the test pairs, never trained on. The split is by unordered pair: (a, b) and (b, a) are on the same side,
so a model that learned a + b = b + a cannot answer a test pair from its mirror image in the training set."""
from dataclasses import dataclass

import torch

from model_core.data.tasks.examples import TaskError, fraction_setting, int_setting, stack_examples
from model_core.data.tokenization import WordTokenizer

PROMPT, ANSWER = "{a} {b} =", "{c}"  # how an example reads, in the task's word tokens


@dataclass(frozen=True)
class ModularAddition:
    p: int = 113  # the modulus (Nanda et al.: 113, a prime)
    train_fraction: float = 0.3  # share of the p² pairs trained on
    seed: int = 0  # which pairs are the training ones
    name: str = "modular-addition"

    @classmethod
    def from_spec(cls, spec: dict) -> "ModularAddition":
        p = int_setting(spec, "p", 113, 2, 1000)
        return cls(p, fraction_setting(spec, "train_fraction", 0.3), int_setting(spec, "seed", 0, 0, 2**31 - 1))

    def spec(self) -> dict:
        """The settings and the prompt format, as saved in a checkpoint (train_config.task)."""
        return {"name": self.name, "p": self.p, "train_fraction": self.train_fraction, "seed": self.seed,
                "prompt": PROMPT, "answer": ANSWER, "rule": "c = (a + b) mod p", "answer_position": -1}

    def tokenizer(self) -> WordTokenizer:
        return WordTokenizer([str(i) for i in range(self.p)] + ["="])

    @property
    def block_size(self) -> int:
        return 3

    def all_pairs(self) -> torch.Tensor:
        """Every (a, b), a-major. [p², 2] int64"""
        a = torch.arange(self.p).repeat_interleave(self.p)
        b = torch.arange(self.p).repeat(self.p)
        return torch.stack([a, b], dim=1)

    def pair_examples(self, pairs: torch.Tensor) -> torch.Tensor:
        """pairs [N, 2] -> examples [N, 2, 3]: input (a, b, =), target (-, -, c)."""
        equals = torch.full((len(pairs), 1), self.p)
        inputs = torch.cat([pairs, equals], dim=1)  # (N, 3)
        targets = torch.full_like(inputs, -1)
        targets[:, -1] = (pairs[:, 0] + pairs[:, 1]) % self.p
        return stack_examples(inputs, targets)

    def train_mask(self) -> torch.Tensor:
        """[p²] bool, a-major: True for the training pairs, a fixed random share of the unordered pairs {a, b}
        (both orders of each on the same side) holding round(train_fraction · p²) ordered pairs or one more."""
        n = self.p * self.p
        n_train = int(round(self.train_fraction * n))
        if not 0 < n_train < n:
            raise TaskError(f"{self.train_fraction:.0%} of {n} pairs leaves no training or no test pairs.")
        pairs = self.all_pairs()
        low, high = pairs.min(1).values, pairs.max(1).values
        unordered = (low * self.p + high).unique()  # one id per {a, b}, sorted
        order = unordered[torch.randperm(len(unordered), generator=torch.Generator().manual_seed(self.seed))]
        orders = torch.where(order // self.p == order % self.p, 1, 2)  # (a, a) is one ordered pair, {a, b} two
        taken = order[: int(torch.searchsorted(orders.cumsum(0), n_train)) + 1]
        mask = torch.isin(low * self.p + high, taken)
        if mask.all():
            raise TaskError(f"{self.train_fraction:.0%} of {n} pairs leaves no test pairs.")
        return mask

    def splits(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(train examples, test examples): disjoint sets of pairs."""
        pairs, mask = self.all_pairs(), self.train_mask()
        return self.pair_examples(pairs[mask]), self.pair_examples(pairs[~mask])
