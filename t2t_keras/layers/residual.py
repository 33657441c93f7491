"""The residual connection around every sub-layer, post- or pre-norm."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf


class Residual(keras.layers.Layer):
    """Wraps a sub-layer with dropout, a residual add and layer norm.

    post (the paper): LayerNorm(x + Dropout(Sublayer(x)));
    pre: x + Dropout(Sublayer(LayerNorm(x))).

    Args:
      position: "post" or "pre".
      dropout: residual dropout rate (P_drop).
      epsilon: layer norm epsilon.
    """

    def __init__(self, position: str, dropout: float, epsilon: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.position = position
        self.rate = dropout
        self.epsilon = epsilon
        self.norm = keras.layers.LayerNormalization(
            epsilon=epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, input_shape: Any) -> None:
        self.norm.build(input_shape)

    def wrap(
        self, x: tf.Tensor, sublayer: Callable[[tf.Tensor], Any], training: bool = False
    ) -> tuple[tf.Tensor, Any]:
        """Applies `sublayer` (which may return (output, extras...)) around x [B, T, D].

        A method rather than `call`: Keras layers take no callables as inputs.

        Returns:
          (new x, the sub-layer's extra outputs as a tuple).
        """
        result = sublayer(self.norm(x) if self.position == "pre" else x)
        output, extras = (
            (result[0], tuple(result[1:])) if isinstance(result, tuple) else (result, ())
        )
        x = x + self.dropout(output, training=training)
        return (self.norm(x) if self.position == "post" else x), extras

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "position": self.position,
            "dropout": self.rate,
            "epsilon": self.epsilon,
        }
