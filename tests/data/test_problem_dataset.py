"""Problem.dataset: input pipelines split the data, eval splits cut long examples with a count."""

from __future__ import annotations

import collections
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import tensorflow as tf

from t2t_keras import registry
from t2t_keras.data import Text2TextProblem
from t2t_keras.data import problem as problem_module
from t2t_keras.models import TransformerHParams

HPARAMS = TransformerHParams(batch_size=64, max_length=16)


class Lengths(Text2TextProblem):
    """Sample i is "i" padded with letters to a length that cycles through 1..20."""

    vocab_type = "byte"
    dataset_splits = {"train": 3, "dev": 1}  # noqa: RUF012

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[dict]:
        for index in range(90 if split == "train" else 40):
            text = str(index).ljust(index % 20 + 1, "x")
            yield {"inputs": text, "targets": text}


@pytest.fixture
def data_dir(tmp_path: Path, clean_registry: None) -> str:
    registry.register_problem(Lengths)
    registry.problem("lengths").generate_data(str(tmp_path), str(tmp_path))
    return str(tmp_path)


def decoded_inputs(dataset: tf.data.Dataset) -> list[str]:
    """Every example's inputs as text (bytes ids - 3), across all batches."""
    texts = []
    for batch in dataset:
        for row in batch["inputs"].numpy():
            texts.append(bytes(int(i) - 3 for i in row if i > 2).decode())
    return texts


@pytest.mark.parametrize(("split", "count"), [("train", 90), ("dev", 40)])
def test_input_pipelines_read_disjoint_parts_that_cover_the_split(
    data_dir: str, split: str, count: int
) -> None:
    # train: 3 shards over 2 pipelines (by shard); dev: 1 shard (by record).
    problem = registry.problem("lengths")
    hparams = TransformerHParams(batch_size=64, max_length=32)
    parts = []
    for pipeline_id in range(2):
        context = tf.distribute.InputContext(2, pipeline_id, 2)
        dataset = problem.dataset(
            split,
            hparams.batching(),
            data_dir,
            repeat=False,
            deterministic=True,
            input_context=context,
        )
        parts.append(collections.Counter(decoded_inputs(dataset)))
    assert parts[0] and parts[1]
    assert not parts[0] & parts[1]
    assert sum((parts[0] + parts[1]).values()) == count


def test_dev_cuts_long_examples_and_logs_how_many(data_dir: str, caplog) -> None:
    problem = registry.problem("lengths")
    with caplog.at_level(logging.WARNING):
        dataset = problem.dataset("dev", HPARAMS.batching(), data_dir, deterministic=True)
    # Inputs are 1..20 characters + EOS: lengths 17..21 exceed 16, 5 of every 20.
    assert "lengths dev: 10 example(s) longer than max_length=16 are cut to it" in caplog.text
    texts = decoded_inputs(dataset)
    assert len(texts) == 40 and max(len(text) for text in texts) == 15


def test_train_drops_long_examples(data_dir: str) -> None:
    problem = registry.problem("lengths")
    texts = decoded_inputs(problem.dataset("train", HPARAMS.batching(), data_dir, repeat=False))
    # Samples 0..79 lose 5 of every 20; samples 80..89 are 1..10 characters long.
    assert len(texts) == 70
    assert max(len(text) for text in texts) == 15


def test_a_problem_can_set_its_own_max_length(data_dir: str) -> None:
    class ShortLengths(Lengths):
        data_name = "lengths"  # Reads the registered problem's files.

        def max_length(self, model_max_length: int) -> int:
            return 8

    problem = ShortLengths()
    texts = decoded_inputs(problem.dataset("dev", HPARAMS.batching(), data_dir, deterministic=True))
    assert max(len(text) for text in texts) == 7


@pytest.mark.parametrize("chains", [1, 2, 3])
def test_parallel_chains_read_every_training_example_once_per_epoch(
    data_dir: str, chains: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(problem_module, "_chains", lambda shards: chains)
    problem = registry.problem("lengths")
    once = decoded_inputs(problem.dataset("train", HPARAMS.batching(), data_dir, repeat=False))
    expected = [str(i).ljust(i % 20 + 1, "x") for i in range(90)]
    assert collections.Counter(once) == collections.Counter(t for t in expected if len(t) < 16)
    # Repeated, every chain keeps coming: the first batches hold examples of every shard.
    repeated = problem.dataset("train", HPARAMS.batching(), data_dir, seed=1).take(300)
    assert set(decoded_inputs(repeated)) == set(once)
