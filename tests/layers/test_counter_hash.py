"""The counter hash's dropout: the rate it promises, masks that differ by seed, XLA = eager."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from t2t_keras.layers import counter_hash


def _kept(
    rate: float, seed: tuple[int, int], shape: tuple[int, ...] = (64, 4, 30, 30)
) -> np.ndarray:
    dropped = counter_hash.dropout(tf.ones(shape), rate, tf.constant(seed, tf.int64))
    return dropped.numpy() != 0.0


@pytest.mark.parametrize("rate", [0.1, 0.3, 0.5])
def test_drops_the_rate_and_scales_what_it_keeps(rate: float) -> None:
    x = tf.random.stateless_normal([200_000], seed=[3, 4])
    dropped = counter_hash.dropout(x, rate, tf.constant([7, 8], tf.int64)).numpy()
    kept = dropped != 0.0
    # 200k Bernoulli draws: the kept share's standard deviation is about 0.001.
    assert abs(kept.mean() - (1.0 - rate)) < 0.005
    np.testing.assert_allclose(dropped[kept], x.numpy()[kept] / (1.0 - rate), rtol=1e-6)


def test_masks_of_neighbouring_seeds_are_independent() -> None:
    first = _kept(0.5, (1, 2))
    for other in [(1, 3), (2, 2), (1, 2 + 2**32), (2**40, 2)]:
        agreement = (first == _kept(0.5, other)).mean()
        assert abs(agreement - 0.5) < 0.01, other
    np.testing.assert_array_equal(first, _kept(0.5, (1, 2)))


def test_no_pattern_along_an_axis() -> None:
    """Neighbouring elements (rows, columns) are not correlated."""
    kept = _kept(0.5, (5, 6)).reshape(-1, 30).astype(np.float32)
    for a, b in [(kept[:, :-1], kept[:, 1:]), (kept[:-1], kept[1:])]:
        assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.01


def test_rate_zero_keeps_everything_and_bad_rates_are_refused() -> None:
    assert _kept(0.0, (1, 1)).all()
    with pytest.raises(ValueError, match="dropout rate"):
        counter_hash.dropout(tf.ones([2]), 1.0, tf.constant([1, 1], tf.int64))


def test_compiled_mask_is_the_eager_mask() -> None:
    x, seed = tf.ones([3, 5, 7]), tf.constant([11, 12], tf.int64)
    compiled = tf.function(lambda x, s: counter_hash.dropout(x, 0.3, s), jit_compile=True)
    np.testing.assert_array_equal(compiled(x, seed), counter_hash.dropout(x, 0.3, seed))
