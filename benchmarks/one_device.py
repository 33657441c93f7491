"""The benchmarks' training runs: one device, no evaluation, for steps or a wall-clock budget."""

from __future__ import annotations

from typing import Any

from loss_curves import curve_point

from t2t_keras import registry
from t2t_keras.benchmark.budget import Budget
from t2t_keras.training import make_strategy
from t2t_keras.training.config import TrainConfig
from t2t_keras.training.trainer import TrainResult, train


def train_without_evaluation(
    problem_name: str,
    hparams_set: str,
    hparams: str,
    data_dir: str,
    output_dir: str,
    **config: Any,
) -> TrainResult:
    """Trains `hparams_set` (with `hparams` overrides) on one device; evaluation off.

    `config` holds the other TrainConfig fields, e.g. `budget(minutes, average)`.
    """
    settings = TrainConfig(eval_every_steps=0, eval_steps=0, eval_bleu_examples=0, **config)
    return train(
        registry.problem(problem_name),
        "transformer",
        registry.hparams(hparams_set).override(hparams),
        data_dir,
        output_dir,
        make_strategy("one_device"),
        settings,
        hparams_set,
    )


# Checkpoints a benchmark's training run saves, evenly over its budget.
CHECKPOINTS = 30


def budget(limit: Budget, average: int) -> dict[str, Any]:
    """TrainConfig fields for a run of `limit`: CHECKPOINTS checkpoints, the last
    `average` averaged."""
    averaged = {"average_checkpoints": average if average > 1 else 0}
    if limit.steps is not None:
        every = max(limit.steps // CHECKPOINTS, 1)
        return {"train_steps": limit.steps, "save_checkpoints_steps": every, **averaged}
    assert limit.seconds is not None
    return {
        "train_steps": 10**9,
        "max_seconds": limit.seconds,
        "save_checkpoints_steps": 0,
        "save_checkpoints_secs": max(int(limit.seconds / CHECKPOINTS), 1),
        **averaged,
    }


def run_summary(result: TrainResult) -> dict[str, Any]:
    """Steps, seconds, target tokens per second and loss curve of a run, for a JSON line."""
    return {
        "steps": result.step,
        "train_seconds": round(result.seconds, 1),
        "target_tokens_per_second": round(result.target_tokens_per_second, 1),
        "loss_curve": [
            curve_point(point["step"], point["seconds"], point["target_tokens"], point["loss"])
            for point in result.loss_curve
        ],
    }


def train_for_budget(
    problem_name: str,
    hparams_set: str,
    hparams: str,
    data_dir: str,
    output_dir: str,
    limit: Budget,
    average: int,
    **config: Any,
) -> dict[str, Any]:
    """Trains within `limit` (`budget`), the loss logged every 100 steps; returns `run_summary`.

    `config` holds the other TrainConfig fields, e.g. `random_seed`.
    """
    result = train_without_evaluation(
        problem_name,
        hparams_set,
        hparams,
        data_dir,
        output_dir,
        **budget(limit, average),
        log_every_steps=100,
        **config,
    )
    return run_summary(result)
