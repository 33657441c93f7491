"""Label-smoothed cross-entropy and per-token accuracy, as sums over non-PAD tokens.

Sums, not means: the training step divides by the number of target tokens in
the global batch (every replica and accumulated micro-batch), so the loss is
the same whatever the number of replicas.

The loss's gradient is written out (the softmax less the smoothed targets)
rather than derived through a log-softmax and a gather, whose gradient
scatters into zeros the size of the logits: on 2048 target tokens and 8,192
pieces the loss and its gradient took 66-73 ms that way, 34 ms written out and
21 ms XLA-compiled, of a 350 ms transformer_small_cpu step.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_keras.data.ids import PAD_ID


def smoothed_cross_entropy_sum(
    logits: tf.Tensor, targets: tf.Tensor, label_smoothing: float, compiled: bool = False
) -> tuple[tf.Tensor, tf.Tensor]:
    """Cross-entropy against smoothed one-hot targets, summed over real tokens.

    The true token gets probability 1 - label_smoothing and every other token
    label_smoothing / (V - 1), as in tensor2tensor.

    Args:
      logits: [B, T, V], cast to float32.
      targets: [B, T] int ids, PAD (0) where there is no token.
      label_smoothing: epsilon_ls in [0, 1).
      compiled: compute the per-token losses and their gradient XLA-compiled
        (`--xla=attention` trains so).

    Returns:
      (loss summed over non-PAD positions, the number of those positions),
      float32 scalars.
    """
    token_losses = _compiled_token_losses if compiled else smoothed_token_losses
    losses = token_losses(tf.cast(logits, tf.float32), tf.cast(targets, tf.int32), label_smoothing)
    weights = token_weights(targets)
    return tf.reduce_sum(losses * weights), tf.reduce_sum(weights)


def smoothed_token_losses(
    logits: tf.Tensor, targets: tf.Tensor, label_smoothing: float
) -> tf.Tensor:
    """[B, T] float32: -sum_v q_v log softmax(logits)_v per position, q the smoothed targets.

    With q_y = 1 - e at the target y and e / (V - 1) elsewhere, that is
    logsumexp(logits) - (q_y - e / (V - 1)) * logits_y - e / (V - 1) * sum(logits),
    and its gradient with respect to the logits is softmax(logits) - q.

    Args:
      logits: [B, T, V] float32; targets: [B, T] int32; label_smoothing: e.
    """
    vocab_size = tf.shape(logits)[-1]
    other = label_smoothing / (tf.cast(vocab_size, tf.float32) - 1.0)
    true = 1.0 - label_smoothing

    @tf.custom_gradient
    def losses(logits: tf.Tensor) -> tuple[tf.Tensor, object]:
        peak = tf.reduce_max(logits, axis=-1, keepdims=True)
        log_normalizer = peak + tf.math.log(
            tf.reduce_sum(tf.exp(logits - peak), axis=-1, keepdims=True)
        )
        true_logit = tf.gather(logits, targets, batch_dims=2)
        loss = log_normalizer[..., 0] - (true - other) * true_logit
        if label_smoothing > 0.0:
            loss -= other * tf.reduce_sum(logits, axis=-1)

        def gradient(upstream: tf.Tensor) -> tf.Tensor:
            smoothed = tf.one_hot(targets, vocab_size, on_value=true, off_value=other)
            return upstream[..., None] * (tf.exp(logits - log_normalizer) - smoothed)

        return loss, gradient

    return losses(logits)


# One compiled function for every shape (XLA compiles once per shape it meets).
_compiled_token_losses = tf.function(
    smoothed_token_losses, jit_compile=True, reduce_retracing=True, autograph=False
)


def correct_tokens(logits: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
    """The number of non-PAD positions where argmax(logits) is the target, float32."""
    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    correct = tf.cast(tf.equal(predictions, tf.cast(targets, tf.int32)), tf.float32)
    return tf.reduce_sum(correct * token_weights(targets))


def token_weights(targets: tf.Tensor) -> tf.Tensor:
    """[B, T] float32: 1 at real tokens, 0 at PAD."""
    return tf.cast(tf.not_equal(targets, PAD_ID), tf.float32)
