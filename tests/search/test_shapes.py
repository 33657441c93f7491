"""Batches padded to a few shapes, so the compiled search is reused, decode exactly as they are."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from t2t_keras.search.shapes import bucket_rows, bucket_width, bucket_widths, search_padded
from tests.decoders import make_decoder
from tests.search.test_search import TINY, build, strip


@pytest.mark.parametrize(
    ("length", "width"), [(1, 8), (8, 8), (9, 16), (64, 64), (65, 80), (129, 160), (250, 256)]
)
def test_bucket_widths(length: int, width: int) -> None:
    assert bucket_width(length, 256) == width


def test_one_row_is_at_least_32_wide_and_no_width_passes_max_length() -> None:
    assert [bucket_width(n, 256, rows=1) for n in (1, 20, 32, 33)] == [32, 32, 32, 40]
    assert bucket_width(10, 20, rows=1) == 20
    assert bucket_widths(100)[-1] == 100 and max(bucket_widths(256)) == 256


@pytest.mark.parametrize(
    ("rows", "padded"), [(1, 1), (3, 4), (8, 8), (9, 16), (32, 32), (33, 64), (100, 128)]
)
def test_bucket_rows(rows: int, padded: int) -> None:
    assert bucket_rows(rows) == padded


@pytest.mark.parametrize("beam_size", [1, 3])
def test_padded_rows_and_columns_change_no_output(beam_size: int) -> None:
    model = build(TINY)
    decoder = make_decoder(model, beam_size, extra_length=4, jit_compile=True)
    rng = np.random.default_rng(0)
    lengths = [5, 3, 9, 2, 7]
    inputs = np.zeros([5, 10], np.int32)
    for row, length in enumerate(lengths):
        inputs[row, : length - 1] = rng.integers(2, TINY.vocab_size, length - 1)
        inputs[row, length - 1] = 1  # EOS
    ids, scores = search_padded(decoder.search, tf.constant(inputs), TINY.max_length)
    assert ids.shape[0] == 5 and decoder.compilations() == 1  # Searched as 8 x 16.
    expected_ids, expected_scores = decoder(inputs)
    for row in range(5):
        assert strip(ids[row, 0].numpy()) == strip(expected_ids[row, 0].numpy())
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-5)
