"""Dropout whose mask differs on every replica of a tf.distribute strategy.

Keras seed generators give every replica the same seed, so under
MirroredStrategy each replica would drop the same units. The replica's id is
folded into the seed here.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf


def replica_seed(generator: keras.random.SeedGenerator) -> tf.Tensor:
    """A fresh [2] int64 seed, distinct per replica (and per worker)."""
    seed = tf.cast(generator.next(), tf.int64)
    context = tf.distribute.get_replica_context()
    replica = 0 if context is None else context.replica_id_in_sync_group
    return seed + tf.stack([tf.constant(0, tf.int64), tf.cast(replica, tf.int64)])


class Dropout(keras.layers.Layer):
    """Inverted dropout with per-replica masks; identity unless training."""

    def __init__(self, rate: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate = rate
        self.seed_generator = keras.random.SeedGenerator()

    def call(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        if not training or self.rate == 0.0:
            return x
        return tf.nn.experimental.stateless_dropout(
            x, self.rate, seed=replica_seed(self.seed_generator)
        )

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "rate": self.rate}
