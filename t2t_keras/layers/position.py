"""Position signals: the paper's sinusoids and a learned table (Table 3 E)."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf


def sinusoid(positions: tf.Tensor, d_model: int, layout: str = "interleaved") -> tf.Tensor:
    """The paper's signal, sin on even and cos on odd dimensions.

    PE(pos, 2i) = sin(pos / 10000^(2i / d_model)),
    PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model)).

    Args:
      positions: [T] integer positions.
      d_model: an even width.
      layout: "interleaved" as above, or "halves": the same sines in the first
        half of the dimensions and the cosines in the second (Marian's, fairseq's).

    Returns:
      [T, d_model] float32.
    """
    if d_model % 2:
        raise ValueError(f"sinusoid positions need an even d_model, got {d_model}.")
    even_dims = tf.range(0, d_model, 2, dtype=tf.float32)  # 2i
    inverse_rates = tf.pow(10000.0, -even_dims / d_model)  # [D/2]
    angles = tf.cast(positions, tf.float32)[:, tf.newaxis] * inverse_rates  # [T, D/2]
    if layout == "halves":  # [sin a0, sin a1, ..., cos a0, cos a1, ...].
        return tf.concat([tf.sin(angles), tf.cos(angles)], axis=-1)
    if layout != "interleaved":
        raise ValueError(f"layout must be interleaved or halves, not {layout!r}")
    # Interleave: [sin a0, cos a0, sin a1, cos a1, ...].
    signal = tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1)  # [T, D/2, 2]
    return tf.reshape(signal, [-1, d_model])


class LearnedPositions(keras.layers.Layer):
    """A trained [max_length, d_model] table, looked up by position."""

    def __init__(self, max_length: int, d_model: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_length = max_length
        self.d_model = d_model

    def build(self, input_shape: Any = None) -> None:
        self.table = self.add_weight(
            name="table",
            shape=(self.max_length, self.d_model),
            initializer=keras.initializers.RandomNormal(stddev=self.d_model**-0.5),
        )

    def call(self, positions: tf.Tensor) -> tf.Tensor:
        """[T] integer positions -> [T, d_model]."""
        return tf.gather(self.table, positions)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "max_length": self.max_length, "d_model": self.d_model}
