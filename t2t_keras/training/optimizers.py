"""The optimizer of an hparams set, taking gradients already summed over replicas.

The training step all-reduces the gradients itself, so that clipping uses the
norm of the global gradient and the summaries show it. Keras optimizers sum
gradients over replicas again inside `apply_gradients`; the classes here skip
that second all-reduce (tests compare 1 and 2 replicas to keep this honest).
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from t2t_keras.models.transformer_hparams import TransformerHParams
from t2t_keras.training.schedules import schedule_from_hparams


class _ReducedGradients:
    """Mixin: gradients arrive summed over replicas; apply them as they are."""

    def _all_reduce_sum_gradients(self, grads_and_vars: Any) -> Any:
        return grads_and_vars


class ReducedAdam(_ReducedGradients, keras.optimizers.Adam):
    """Adam on gradients already summed over replicas, one fused kernel per variable.

    Keras's Adam updates a variable with nine elementwise operations, each a
    pass over the variable and its two moments; TensorFlow's ApplyAdam kernel
    makes the same update (the same formula: the step size
    lr * sqrt(1 - beta2^t) / (1 - beta1^t), epsilon outside the square root)
    in one, which trains transformer_base 2-3% faster on 2 CPU cores.
    """

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        if self.amsgrad:
            super().update_step(gradient, variable, learning_rate)
            return
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable),
            m=_handle(self._momentums[index]),
            v=_handle(self._velocities[index]),
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
        )


def _handle(variable: Any) -> tf.Tensor:
    """The resource handle of a Keras variable's TensorFlow variable, or of a TensorFlow one.

    Inside a distribution strategy's update, a mirrored variable's handle is
    that of the replica being updated.
    """
    if isinstance(variable, keras.Variable):
        variable = variable.value
    return variable.handle


class ReducedAdafactor(_ReducedGradients, keras.optimizers.Adafactor):
    """Adafactor on gradients already summed over replicas."""


def optimizer_from_hparams(hparams: TransformerHParams) -> keras.optimizers.Optimizer:
    """hparams.optimizer with the hparams' learning-rate schedule.

    Named "adam" or "adafactor" whatever else exists, so checkpoint keys are stable.
    """
    schedule = schedule_from_hparams(hparams)
    if hparams.optimizer == "adafactor":
        return ReducedAdafactor(learning_rate=schedule, name="adafactor")
    return ReducedAdam(
        learning_rate=schedule,
        beta_1=hparams.adam_beta1,
        beta_2=hparams.adam_beta2,
        epsilon=hparams.adam_epsilon,
        name="adam",
    )
