"""The fused Adam makes Keras's Adam update: the same weights after several steps."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_keras.training.optimizers import ReducedAdam


@pytest.mark.parametrize("compiled", [False, True])
def test_fused_adam_updates_as_keras_adam_does(compiled: bool) -> None:
    rng = np.random.default_rng(1)
    start = rng.normal(size=[7, 5]).astype("float32")
    gradients = [tf.constant(rng.normal(size=[7, 5]).astype("float32")) for _ in range(5)]
    keras_adam, fused = (
        trained(optimizer_class, start, gradients, compiled)
        for optimizer_class in (keras.optimizers.Adam, ReducedAdam)
    )
    assert np.abs(keras_adam - start).max() > 0.01  # The steps moved the weights.
    np.testing.assert_allclose(fused, keras_adam, rtol=0, atol=1e-6)


def trained(
    optimizer_class: type, start: np.ndarray, gradients: list[tf.Tensor], compiled: bool
) -> np.ndarray:
    variable = keras.Variable(start)
    optimizer = optimizer_class(learning_rate=0.01, beta_1=0.9, beta_2=0.98, epsilon=1e-9)

    def apply(gradient: tf.Tensor) -> None:
        optimizer.apply_gradients([(gradient, variable)])

    step = tf.function(apply) if compiled else apply
    for gradient in gradients:
        step(gradient)
    assert int(optimizer.iterations) == len(gradients)
    return variable.numpy()
