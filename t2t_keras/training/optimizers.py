"""The optimizer of an hparams set, taking gradients already summed over replicas.

The training step all-reduces the gradients itself, so that clipping uses the
norm of the global gradient and the summaries show it. Keras optimizers sum
gradients over replicas again inside `apply_gradients`; the classes here skip
that second all-reduce (tests compare 1 and 2 replicas to keep this honest).
"""

from __future__ import annotations

from typing import Any

import keras

from t2t_keras.models.transformer_hparams import TransformerHParams
from t2t_keras.training.schedules import schedule_from_hparams


class _ReducedGradients:
    """Mixin: gradients arrive summed over replicas; apply them as they are."""

    def _all_reduce_sum_gradients(self, grads_and_vars: Any) -> Any:
        return grads_and_vars


class ReducedAdam(_ReducedGradients, keras.optimizers.Adam):
    """Adam on gradients already summed over replicas."""


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
