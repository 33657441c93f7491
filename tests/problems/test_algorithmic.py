"""The embedded algorithmic problems: deterministic, correct, ready to batch."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2t_keras import registry
from t2t_keras.models import TransformerHParams


@pytest.mark.parametrize(
    ("name", "check"),
    [
        ("algorithmic_copy_decimal", lambda i, t: t == i),
        ("algorithmic_reverse_decimal", lambda i, t: t == i[::-1]),
        ("algorithmic_addition_decimal", lambda i, t: int(t) == sum(map(int, i.split("+")))),
    ],
)
def test_samples_are_right_and_repeatable(name: str, check) -> None:
    problem = registry.problem(name)
    samples = list(problem.generate_samples("", "", "dev"))
    assert len(samples) == 1000
    assert all(check(s["inputs"], s["targets"]) for s in samples)
    assert samples == list(problem.generate_samples("", "", "dev"))
    assert samples != list(problem.generate_samples("", "", "test"))


def test_reverse_problem_generates_and_batches(tmp_path: Path) -> None:
    problem = registry.problem("algorithmic_reverse_decimal")
    problem.num_samples = {"train": 500, "dev": 50, "test": 50}
    problem.generate_data(str(tmp_path), str(tmp_path / "tmp"))
    hparams = TransformerHParams(batch_size=256, max_length=32)
    batch = next(
        iter(problem.dataset("dev", hparams.batching(), str(tmp_path), deterministic=True))
    )
    vocab = problem.feature_encoders(str(tmp_path))["inputs"]
    for inputs, targets in zip(batch["inputs"].numpy(), batch["targets"].numpy(), strict=True):
        assert vocab.decode(list(targets)) == vocab.decode(list(inputs))[::-1]
