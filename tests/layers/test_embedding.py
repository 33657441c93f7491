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
    logits = layer.project(hidden).numpy()
    assert logits.dtype == np.float32
    # A bfloat16 product's output: every logit is a bfloat16 value, which a
    # float32 product's would not be. How the sums are accumulated is the
    # CPU's kernel's (on AVX2 emulated, up to 6 bfloat16 steps from the
    # rounded float32 sum), so the values are checked against the exact
    # product at bfloat16's tolerance only.
    np.testing.assert_array_equal(logits, _bfloat16(logits))
    exact = hidden.numpy() @ layer.embeddings.numpy().T
    np.testing.assert_allclose(logits, exact, rtol=3e-2, atol=0.1)
    assert np.abs(logits - exact).max() > 1e-4


def test_float32_projects_exactly() -> None:
    layer = ScaledEmbedding(64, 16, initializer_stddev=0.5)
    layer.build()
    hidden = tf.random.stateless_normal([2, 3, 16], seed=[1, 2])
    exact = hidden.numpy() @ layer.embeddings.numpy().T
    np.testing.assert_allclose(layer.project(hidden).numpy(), exact, rtol=1e-5, atol=1e-5)
