"""Training: schedules, the label-smoothed loss, strategies, the step, the loop."""

from t2t_keras.training.loss import correct_tokens, smoothed_cross_entropy_sum
from t2t_keras.training.optimizers import optimizer_from_hparams
from t2t_keras.training.schedules import TransformerSchedule, schedule_from_hparams
from t2t_keras.training.step import TrainStep
from t2t_keras.training.strategies import is_chief, make_strategy, split_cpu

__all__ = [
    "TrainStep",
    "TransformerSchedule",
    "correct_tokens",
    "is_chief",
    "make_strategy",
    "optimizer_from_hparams",
    "schedule_from_hparams",
    "smoothed_cross_entropy_sum",
    "split_cpu",
]
