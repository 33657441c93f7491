"""The label-smoothed loss and token accuracy against numpy on literal arrays."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from t2t_keras.training import correct_tokens, smoothed_cross_entropy_sum

LOGITS = np.array(
    [[[2.0, 0.5, -1.0, 0.0], [0.1, 0.2, 3.0, -2.0], [1.0, 1.0, 1.0, 1.0]]], np.float32
)  # [B=1, T=3, V=4]
TARGETS = np.array([[3, 2, 0]], np.int32)  # The last position is PAD.


def _reference(smoothing: float) -> float:
    log_probs = LOGITS - np.log(np.exp(LOGITS).sum(-1, keepdims=True))
    total = 0.0
    for t, target in enumerate(TARGETS[0][:2]):
        wanted = np.full(4, smoothing / 3)
        wanted[target] = 1.0 - smoothing
        total -= (wanted * log_probs[0, t]).sum()
    return total


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_smoothed_cross_entropy_sum(smoothing: float) -> None:
    loss, tokens = smoothed_cross_entropy_sum(tf.constant(LOGITS), TARGETS, smoothing)
    assert float(tokens) == 2.0
    assert float(loss) == pytest.approx(_reference(smoothing), rel=1e-6)


def _reference_gradient(smoothing: float) -> np.ndarray:
    """d loss / d logits: softmax less the smoothed targets at real tokens, 0 at PAD."""
    softmax = np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
    wanted = np.full(LOGITS.shape, smoothing / 3, np.float32)
    gradient = np.zeros_like(LOGITS)
    for t, target in enumerate(TARGETS[0][:2]):
        wanted[0, t, target] = 1.0 - smoothing
        gradient[0, t] = softmax[0, t] - wanted[0, t]
    return gradient


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_gradient_is_softmax_less_smoothed_targets(smoothing: float, compiled: bool) -> None:
    logits = tf.constant(LOGITS)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss, _ = smoothed_cross_entropy_sum(logits, TARGETS, smoothing, compiled)
    assert float(loss) == pytest.approx(_reference(smoothing), rel=1e-6)
    gradient = tape.gradient(loss, logits).numpy()
    np.testing.assert_allclose(gradient, _reference_gradient(smoothing), atol=1e-6)


def test_gradient_flows_through_bfloat16_logits() -> None:
    logits = tf.constant(LOGITS, tf.bfloat16)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss, _ = smoothed_cross_entropy_sum(logits, TARGETS, 0.1)
    gradient = tape.gradient(loss, logits)
    assert gradient.dtype == tf.bfloat16
    np.testing.assert_allclose(
        gradient.numpy().astype(np.float32), _reference_gradient(0.1), atol=1e-2
    )


def test_no_smoothing_is_sparse_cross_entropy() -> None:
    loss, _ = smoothed_cross_entropy_sum(tf.constant(LOGITS), TARGETS, 0.0)
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(TARGETS[:, :2], LOGITS[:, :2])
    assert float(loss) == pytest.approx(float(tf.reduce_sum(per_token)), rel=1e-6)


def test_correct_tokens_ignores_pad() -> None:
    # argmax is [0, 2, 0]: position 0 wrong (target 3), 1 right, 2 is PAD.
    assert float(correct_tokens(tf.constant(LOGITS), TARGETS)) == 1.0
