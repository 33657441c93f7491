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


def beam_step_bias(ancestors: tf.Tensor, index: tf.Tensor | int) -> tf.Tensor:
    """Masks a sentence's pooled one-step cache down to each beam's own history.

    Args:
      ancestors: [B, G, L] int: for beam g of sentence b and position l, the
        row (0..G-1) whose cache slot l holds that beam's key and value.
      index: the position being decoded, one for all sentences or [B], each
        sentence's own; slots after it are masked.

    Returns:
      [B, 1, G, G * L] float32: query row g may see slot c * L + l only where
      ancestors[b, g, l] == c and l <= index.
    """
    rows = ancestors.shape[1]
    length = tf.shape(ancestors)[2] if ancestors.shape[2] is None else ancestors.shape[2]
    owner = tf.equal(ancestors[:, :, tf.newaxis, :], tf.range(rows)[:, tf.newaxis])  # [B, G, G, L]
    own_index = tf.reshape(index, [-1, 1, 1, 1])  # [B|1, 1, 1, 1]
    allowed = tf.logical_and(owner, tf.range(length) <= own_index)
    bias = tf.where(allowed, 0.0, MASKED)
    return tf.reshape(bias, [-1, 1, rows, rows * length])
