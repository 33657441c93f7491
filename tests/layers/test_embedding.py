"""The shared embedding's output projection: float32 logits, the product in the compute dtype."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_keras.layers.embedding import ScaledEmbedding


def _bfloat16(array: np.ndarray) -> np.ndarray:
    return tf.cast(tf.cast(array, tf.bfloat16), tf.float32).numpy()


def test_mixed_bfloat16_projects_in_bfloat16_to_float32_logits() -> None:
    layer = ScaledEmbedding(64, 16, initializer_stddev=0.5, dtype="mixed_bfloat16")
    layer.build()
    hidden = tf.random.stateless_normal([2, 3, 16], seed=[1, 2])
    logits = layer.project(hidden)
    assert logits.dtype == tf.float32
    table = layer.embeddings.numpy()
    # The product of the bfloat16-rounded operands, rounded to bfloat16: not float32's.
    expected = _bfloat16(_bfloat16(hidden.numpy()) @ _bfloat16(table).T)
    np.testing.assert_allclose(logits.numpy(), expected, rtol=1e-2, atol=1e-2)
    exact = hidden.numpy() @ table.T
    assert np.abs(logits.numpy() - exact).max() > 1e-4


def test_float32_projects_exactly() -> None:
    layer = ScaledEmbedding(64, 16, initializer_stddev=0.5)
    layer.build()
    hidden = tf.random.stateless_normal([2, 3, 16], seed=[1, 2])
    exact = hidden.numpy() @ layer.embeddings.numpy().T
    np.testing.assert_allclose(layer.project(hidden).numpy(), exact, rtol=1e-5, atol=1e-5)
