"""The residual connection around every sub-layer, post- or pre-norm."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from t2t_keras.layers.dropout import Dropout


class Residual(keras.layers.Layer):
    """Dropout, residual add and layer norm around one sub-layer.

    post (the paper): LayerNorm(x + Dropout(Sublayer(x)));
    pre: x + Dropout(Sublayer(LayerNorm(x))). Build it, then use it as

        h = block.sublayer_input(x)
        x = block(x, sublayer(h), training=training)

    Args:
      position: "post" or "pre".
      dropout: residual dropout rate (P_drop).
      epsilon: layer norm epsilon.
    """

    def __init__(self, position: str, dropout: float, epsilon: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.position = position
        self.dropout_rate = dropout
        self.epsilon = epsilon

    def build(self, x_shape: Any, output_shape: Any = None) -> None:
        self.norm = keras.layers.LayerNormalization(
            epsilon=self.epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.norm.build(x_shape)
        self.dropout = Dropout(self.dropout_rate, dtype=self.dtype_policy)

    def sublayer_input(self, x: tf.Tensor) -> tf.Tensor:
        """What the sub-layer sees: LayerNorm(x) before it (pre), else x. [B, T, D]."""
        if not self.built:  # Called before the block itself, so it may build it.
            self.build(x.shape)
        return self.norm(x) if self.position == "pre" else x

    def call(self, x: tf.Tensor, output: tf.Tensor, training: bool = False) -> tf.Tensor:
        """x + Dropout(output), normalized after the add when post-norm: [B, T, D]."""
        x = x + self.dropout(output, training=training)
        return self.norm(x) if self.position == "post" else x

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "position": self.position,
            "dropout": self.dropout_rate,
            "epsilon": self.epsilon,
        }
