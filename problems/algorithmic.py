"""Algorithmic toy problems that need no download: copy, reverse, addition.

Digits as characters with a byte vocabulary; samples come from a random
generator seeded by problem and split, so every run writes the same data.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from t2t_keras import registry
from t2t_keras.data.text_problem import Sample, Text2TextProblem


class AlgorithmicProblem(Text2TextProblem):
    """Random digit strings of 1..max_digits digits, mapped by `transform`."""

    vocab_type = "byte"
    max_digits = 20
    num_samples = {"train": 20_000, "dev": 1_000, "test": 1_000}  # noqa: RUF012
    dataset_splits = {"train": 2, "dev": 1, "test": 1}  # noqa: RUF012

    def eval_metrics(self) -> list[str]:
        """Outputs are digit strings: an output is right or wrong as a whole."""
        return ["exact_match"]

    def sample(self, rng: random.Random) -> Sample:
        raise NotImplementedError

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        rng = random.Random(f"{self.data_name}/{split}")
        for _ in range(self.num_samples[split]):
            yield self.sample(rng)

    def digits(self, rng: random.Random) -> str:
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, self.max_digits)))


@registry.register_problem
class AlgorithmicCopyDecimal(AlgorithmicProblem):
    """Copy a string of up to 20 digits."""

    def sample(self, rng: random.Random) -> Sample:
        digits = self.digits(rng)
        return {"inputs": digits, "targets": digits}


@registry.register_problem
class AlgorithmicReverseDecimal(AlgorithmicProblem):
    """Reverse a string of up to 20 digits."""

    def sample(self, rng: random.Random) -> Sample:
        digits = self.digits(rng)
        return {"inputs": digits, "targets": digits[::-1]}


@registry.register_problem
class AlgorithmicAdditionDecimal(AlgorithmicProblem):
    """Add two numbers of up to 20 digits: "123+45" -> "168"."""

    def sample(self, rng: random.Random) -> Sample:
        first, second = int(self.digits(rng)), int(self.digits(rng))
        return {"inputs": f"{first}+{second}", "targets": str(first + second)}
