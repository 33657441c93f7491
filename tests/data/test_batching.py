"""Token-based, length-bucketed batching: boundaries, batch shapes, filter, truncate."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_profiles import ci_budget

from t2t_keras.data import batching
from t2t_keras.data.ids import EOS_ID


def make_examples(lengths: list[tuple[int, int]]) -> list[tuple[tuple[int, ...], ...]]:
    """Example k: inputs (k+2, ..., EOS), targets (k+1000, ..., EOS), of the given lengths."""
    return [
        ((k + 2,) * (source - 1) + (EOS_ID,), (k + 1000,) * (target - 1) + (EOS_ID,))
        for k, (source, target) in enumerate(lengths)
    ]


def make_dataset(lengths: list[tuple[int, int]]) -> tf.data.Dataset:
    """make_examples(lengths) as {"inputs": int32 [S], "targets": int32 [T]}."""
    width = max(max(pair) for pair in lengths)
    padded = np.zeros([len(lengths), 2, width], np.int32)
    for k, example in enumerate(make_examples(lengths)):
        for feature, sequence in enumerate(example):
            padded[k, feature, : len(sequence)] = sequence
    dataset = tf.data.Dataset.from_tensor_slices((padded, np.array(lengths, np.int32)))
    return dataset.map(
        lambda rows, sizes: {"inputs": rows[0, : sizes[0]], "targets": rows[1, : sizes[1]]}
    )


def unpad(row: np.ndarray) -> tuple[int, ...]:
    """The sequence up to its EOS; asserts that only zeros follow."""
    end = list(row).index(EOS_ID) + 1
    assert not row[end:].any(), f"non-zero padding in {row}"
    return tuple(row[:end])


def as_examples(dataset: tf.data.Dataset) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return [
        (tuple(example["inputs"].numpy()), tuple(example["targets"].numpy())) for example in dataset
    ]


def test_bucket_boundaries_literal() -> None:
    assert batching.bucket_boundaries(8, 64, 1.1) == [
        *range(8, 21),
        *[22, 24, 26, 28, 30, 33, 36, 39, 42, 46, 50, 55, 60, 64],
    ]
    assert batching.bucket_boundaries(1, 5, 2.0) == [1, 2, 4, 5]
    assert batching.bucket_boundaries(10, 12, 1.5) == [10, 12]
    assert batching.bucket_boundaries(8, 8, 1.1) == [8]


@pytest.mark.parametrize(
    ("min_length", "max_length", "step", "message"),
    [(0, 8, 1.1, "at least 1"), (8, 4, 1.1, "below min_length_bucket"), (8, 64, 1.0, "above 1")],
)
def test_bucket_boundaries_errors(
    min_length: int, max_length: int, step: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        batching.bucket_boundaries(min_length, max_length, step)


@ci_budget(50, deadline=None)
@given(st.integers(1, 40), st.integers(0, 500), st.floats(1.01, 3.0))
def test_bucket_boundaries_increase_to_max_length(min_length: int, extra: int, step: float) -> None:
    boundaries = batching.bucket_boundaries(min_length, min_length + extra, step)
    assert boundaries[0] == min_length and boundaries[-1] == min_length + extra
    assert boundaries == sorted(set(boundaries))  # Strictly increasing.


@st.composite
def batching_cases(draw: st.DrawFn) -> tuple[list[tuple[int, int]], int, int, int, float]:
    max_length = draw(st.integers(8, 64))
    min_length_bucket = draw(st.integers(1, 16))  # Above max_length: one bucket.
    step = draw(st.floats(1.05, 2.0))
    lengths = st.tuples(st.integers(1, max_length), st.integers(1, max_length))
    examples = draw(st.lists(lengths, min_size=1, max_size=40))
    batch_size = draw(st.integers(max_length, 4 * max_length))
    return examples, batch_size, max_length, min_length_bucket, step


@ci_budget(25, deadline=None)
@given(batching_cases())
def test_batches_respect_tokens_buckets_and_keep_every_example(
    case: tuple[list[tuple[int, int]], int, int, int, float],
) -> None:
    lengths, batch_size, max_length, min_length_bucket, step = case
    boundaries = batching.bucket_boundaries(min(min_length_bucket, max_length), max_length, step)
    batches = batching.batch_by_length(
        make_dataset(lengths), batch_size, max_length, min_length_bucket, step
    )
    seen = []
    for batch in batches.as_numpy_iterator():
        inputs, targets = batch["inputs"], batch["targets"]
        size, length = inputs.shape
        assert targets.shape == (size, length)
        assert length in boundaries and size * length <= batch_size
        # Each example sits in the smallest bucket that holds it.
        below = ([0, *boundaries])[boundaries.index(length)]
        for row_inputs, row_targets in zip(inputs, targets, strict=True):
            example = (unpad(row_inputs), unpad(row_targets))
            assert below < max(map(len, example)) <= length
            seen.append(example)
    assert collections.Counter(seen) == collections.Counter(make_examples(lengths))


def test_full_batches_and_drop_remainder() -> None:
    lengths = [(3, 5)] * 10 + [(20, 2)] * 3
    batches = batching.batch_by_length(make_dataset(lengths), 32, 24, drop_remainder=True)
    shapes = [tuple(batch["inputs"].shape) for batch in batches]
    # Bucket 8 holds 32 // 8 = 4 examples per batch, bucket 20 holds 1.
    assert sorted(shapes) == [(1, 20)] * 3 + [(4, 8)] * 2


def test_short_max_length_makes_one_bucket() -> None:
    batches = batching.batch_by_length(make_dataset([(2, 3), (4, 1)]), 8, 4)
    assert [batch["inputs"].shape for batch in batches] == [(2, 4)]


def test_batch_size_below_max_length_is_refused() -> None:
    with pytest.raises(ValueError, match=r"batch_size=100 .* counts tokens .* at least max_length"):
        batching.batch_by_length(make_dataset([(2, 2)]), 100, 256)


def test_too_long_example_fails_with_a_clear_message() -> None:
    batches = batching.batch_by_length(make_dataset([(30, 2)]), 64, 16)
    with pytest.raises(tf.errors.InvalidArgumentError, match="filter_by_length or truncate"):
        list(batches)


def test_filter_by_length_drops_longer_examples() -> None:
    lengths = [(3, 3), (9, 2), (2, 8), (8, 8), (1, 12)]
    kept = as_examples(batching.filter_by_length(make_dataset(lengths), 8))
    assert [(len(source), len(target)) for source, target in kept] == [(3, 3), (2, 8), (8, 8)]


def test_truncate_keeps_eos_last() -> None:
    examples = as_examples(batching.truncate(make_dataset([(6, 2), (3, 4), (1, 9)]), 4))
    assert examples == [
        ((2, 2, 2, EOS_ID), (1000, EOS_ID)),
        ((3, 3, EOS_ID), (1001, 1001, 1001, EOS_ID)),
        ((EOS_ID,), (1002, 1002, 1002, EOS_ID)),
    ]


def test_deterministic_with_repeat_and_prefetch() -> None:
    options = tf.data.Options()
    options.deterministic = True
    lengths = [(n % 13 + 1, n % 7 + 1) for n in range(30)]

    def run(repeat_first: bool) -> list[tuple[tuple[int, ...], ...]]:
        dataset = make_dataset(lengths)
        if repeat_first:  # As Problem.dataset does for training.
            dataset = dataset.repeat()
        batches = batching.batch_by_length(dataset, 40, 16).with_options(options)
        if not repeat_first:
            batches = batches.repeat()
        batches = batches.prefetch(tf.data.AUTOTUNE).take(12)
        return [tuple(map(tuple, batch["targets"])) for batch in batches.as_numpy_iterator()]

    for repeat_first in (True, False):
        first = run(repeat_first)
        assert len(first) == 12 and first == run(repeat_first)
    # An endless input fills every batch: B = 40 // L exactly.
    assert all(len(batch) == 40 // len(batch[0]) for batch in run(True))
