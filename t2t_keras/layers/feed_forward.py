"""The position-wise feed-forward block: max(0, x W1 + b1) W2 + b2, or another activation."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from t2t_keras.layers import initializers
from t2t_keras.layers.dropout import Dropout

# The activations a feed-forward block may use: hparams' names, Keras' functions.
ACTIVATIONS = {
    "relu": keras.activations.relu,
    "swish": keras.activations.silu,
    "gelu": lambda x: keras.activations.gelu(x, approximate=False),
}


class FeedForward(keras.layers.Layer):
    """Two linear maps with an activation between, applied at every position alike.

    Args:
      d_ff: inner width.
      relu_dropout: dropout on the activation's output.
      initializer_stddev: 0 for Glorot-uniform kernels, else N(0, this)
        (`t2t_keras.layers.initializers`).
      activation: "relu" (the paper's), "swish" (x * sigmoid(x), OPUS-MT's) or
        "gelu" (the exact, erf form).
    """

    def __init__(
        self,
        d_ff: int,
        relu_dropout: float = 0.0,
        initializer_stddev: float = 0.0,
        activation: str = "relu",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, not {activation!r}")
        self.d_ff = d_ff
        self.relu_dropout = relu_dropout
        self.initializer_stddev = initializer_stddev
        self.activation = activation

    def build(self, input_shape: Any) -> None:
        d_model, stddev = input_shape[-1], self.initializer_stddev
        self.inner = keras.layers.Dense(
            self.d_ff,
            activation=ACTIVATIONS[self.activation],
            kernel_initializer=initializers.projection(stddev, d_model, self.d_ff),
            dtype=self.dtype_policy,
            name="inner",
        )
        self.inner.build(input_shape)
        self.dropout = Dropout(self.relu_dropout, dtype=self.dtype_policy)
        self.outer = keras.layers.Dense(
            d_model,
            kernel_initializer=initializers.projection(stddev, self.d_ff, d_model),
            dtype=self.dtype_policy,
            name="outer",
        )
        self.outer.build((*input_shape[:-1], self.d_ff))

    def call(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        """[B, T, D] -> [B, T, D]."""
        return self.outer(self.dropout(self.inner(x), training=training))

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "d_ff": self.d_ff,
            "relu_dropout": self.relu_dropout,
            "initializer_stddev": self.initializer_stddev,
            "activation": self.activation,
        }
