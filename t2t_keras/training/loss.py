"""Label-smoothed cross-entropy and per-token accuracy, as sums over non-PAD tokens.

Sums, not means: the training step divides by the number of target tokens in
the global batch (every replica and accumulated micro-batch), so the loss is
the same whatever the number of replicas.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_keras.data.ids import PAD_ID


def smoothed_cross_entropy_sum(
    logits: tf.Tensor, targets: tf.Tensor, label_smoothing: float
) -> tuple[tf.Tensor, tf.Tensor]:
    """Cross-entropy against smoothed one-hot targets, summed over real tokens.

    The true token gets probability 1 - label_smoothing and every other token
    label_smoothing / (V - 1), as in tensor2tensor.

    Args:
      logits: [B, T, V] float32.
      targets: [B, T] int ids, PAD (0) where there is no token.
      label_smoothing: epsilon_ls in [0, 1).

    Returns:
      (loss summed over non-PAD positions, the number of those positions),
      float32 scalars.
    """
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    vocab_size = tf.cast(tf.shape(logits)[-1], tf.float32)
    true_log_prob = tf.gather(log_probs, tf.cast(targets, tf.int32), batch_dims=2)
    confidence = 1.0 - label_smoothing
    loss = -confidence * true_log_prob
    if label_smoothing > 0.0:
        others = tf.reduce_sum(log_probs, axis=-1) - true_log_prob
        loss -= label_smoothing / (vocab_size - 1.0) * others
    weights = token_weights(targets)
    return tf.reduce_sum(loss * weights), tf.reduce_sum(weights)


def correct_tokens(logits: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
    """The number of non-PAD positions where argmax(logits) is the target, float32."""
    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    correct = tf.cast(tf.equal(predictions, tf.cast(targets, tf.int32)), tf.float32)
    return tf.reduce_sum(correct * token_weights(targets))


def token_weights(targets: tf.Tensor) -> tf.Tensor:
    """[B, T] float32: 1 at real tokens, 0 at PAD."""
    return tf.cast(tf.not_equal(targets, PAD_ID), tf.float32)
