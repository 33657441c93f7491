"""Learning-rate schedules of the Transformer, as functions of the global step."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from t2t_keras.models.transformer_hparams import TransformerHParams


@keras.saving.register_keras_serializable(package="t2t_keras")
class TransformerSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """The learning rate at a step; step 1 is the first update.

    Keras calls the schedule with the optimizer's iteration count, which is 0
    at the first update, so `__call__(iterations)` is the rate at step
    iterations + 1.

    Args:
      kind: "paper": learning_rate * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5),
        Section 5.3 of the paper; "t2t": tensor2tensor's
        constant * linear_warmup * rsqrt_decay * rsqrt_hidden_size, that is
        learning_rate * min(1, step / warmup) * max(step, warmup)^-0.5 * d_model^-0.5;
        "constant": learning_rate at every step.
      learning_rate: the multiplier (with "constant", the rate itself).
      d_model: the model width.
      warmup_steps: steps of linear warmup.
    """

    def __init__(self, kind: str, learning_rate: float, d_model: int, warmup_steps: int) -> None:
        if kind not in ("paper", "t2t", "constant"):
            raise ValueError(f"unknown learning-rate schedule {kind!r}")
        self.kind = kind
        self.learning_rate = learning_rate
        self.d_model = d_model
        self.warmup_steps = warmup_steps

    def __call__(self, iterations: Any) -> tf.Tensor:
        return self.at_step(tf.cast(iterations, tf.float32) + 1.0)

    def at_step(self, step: Any) -> tf.Tensor:
        """The rate at `step` (1-based), float32."""
        step = tf.cast(step, tf.float32)
        scale = tf.constant(self.learning_rate, tf.float32)
        if self.kind == "constant":
            return scale + 0.0 * step
        warmup = float(self.warmup_steps)
        rsqrt_d_model = self.d_model**-0.5
        if self.kind == "paper":
            return scale * rsqrt_d_model * tf.minimum(tf.math.rsqrt(step), step * warmup**-1.5)
        linear_warmup = tf.minimum(1.0, step / warmup)
        return scale * linear_warmup * tf.math.rsqrt(tf.maximum(step, warmup)) * rsqrt_d_model

    def get_config(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "learning_rate": self.learning_rate,
            "d_model": self.d_model,
            "warmup_steps": self.warmup_steps,
        }


def schedule_from_hparams(hparams: TransformerHParams) -> TransformerSchedule:
    """The schedule named by hparams.learning_rate_schedule."""
    return TransformerSchedule(
        hparams.learning_rate_schedule,
        hparams.learning_rate,
        hparams.d_model,
        hparams.warmup_steps,
    )
