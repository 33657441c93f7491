"""Attention biases: 0 where attending is allowed, a large negative number where not.

Biases are float32 and added to the attention scores before the softmax, so a
masked position gets exactly zero weight. Shapes broadcast against the scores
[B, H, T, S] (batch, heads, query length, key length).
"""

from __future__ import annotations

import tensorflow as tf

from t2t_keras.data.ids import PAD_ID

# exp(-1e9 - max) underflows to exactly 0 in float32.
MASKED = -1e9


def padding_bias(ids: tf.Tensor) -> tf.Tensor:
    """Masks PAD keys: [B, S] int ids -> [B, 1, 1, S] float32."""
    is_pad = tf.cast(tf.equal(ids, PAD_ID), tf.float32)
    return (is_pad * MASKED)[:, tf.newaxis, tf.newaxis, :]


def causal_bias(length: int | tf.Tensor) -> tf.Tensor:
    """Masks future keys: query t sees keys 0..t. -> [1, 1, T, T] float32."""
    allowed = tf.linalg.band_part(tf.ones([length, length]), -1, 0)
    return ((1.0 - allowed) * MASKED)[tf.newaxis, tf.newaxis, :, :]


def step_bias(index: int | tf.Tensor, cache_length: int) -> tf.Tensor:
    """Masks cache slots after `index` for one decoding step: -> [1, 1, 1, L] float32."""
    later = tf.cast(tf.range(cache_length) > index, tf.float32)
    return (later * MASKED)[tf.newaxis, tf.newaxis, tf.newaxis, :]
