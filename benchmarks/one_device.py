"""The training benchmarks' common flags, and their runs: one device, no evaluation, in a budget."""

from __future__ import annotations

from typing import Any

from absl import flags, logging
from loss_curves import curve_point

from t2t_keras import modes, registry
from t2t_keras.benchmark.budget import Budget
from t2t_keras.training import make_strategy
from t2t_keras.training.config import TrainConfig
from t2t_keras.training.hardware import resolve_mixed_precision
from t2t_keras.training.trainer import train

FLAGS = flags.FLAGS
flags.disclaim_key_flags()  # The flags of `define_flags` are its caller's, in its --help.
# Checkpoints a benchmark's training run saves, evenly over its budget.
CHECKPOINTS = 30


def budget(limit: Budget, average: int) -> dict[str, Any]:
    """TrainConfig fields for a run of `limit`: CHECKPOINTS checkpoints, the last `average` averaged."""
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


def define_flags(hparams_set: str) -> None:
    """The training benchmarks' common flags, --hparams_set defaulting to `hparams_set`."""
    flags.DEFINE_string("hparams_set", hparams_set, "The hparams set trained.")
    flags.DEFINE_string("hparams", "", "Overrides of the hparams set.")
    flags.DEFINE_string("decode_hparams", "", "Decoding settings, as t2t-decoder's.")
    flags.DEFINE_integer("average", 5, "Checkpoints averaged at the end; 1 = the last.")
    flags.DEFINE_integer("seed", 1, "Random seed of initialization, dropout and shuffling.")
    flags.DEFINE_enum(
        "mixed_precision", modes.PRECISION_AUTO, modes.PRECISION_CHOICES, modes.PRECISION_HELP
    )
    flags.DEFINE_string(
        "work_dir", None, "Where data and checkpoints go; a temporary folder if unset."
    )


def train_for_budget(
    problem_name: str, data_dir: str, output_dir: str, limit: Budget, **config: Any
) -> dict[str, Any]:
    """Trains --hparams_set as `define_flags`'s flags say, on one device within `limit`
    (`budget`), evaluation off, the loss logged every 100 steps; `config` holds other
    TrainConfig fields (e.g. `xla`). Returns the run's fields of a JSON line."""
    precision, why = resolve_mixed_precision(FLAGS.mixed_precision)
    logging.info("Mixed precision: %s; budget: %s.", why, limit.description)
    settings = TrainConfig(
        eval_every_steps=0, eval_steps=0, eval_bleu_examples=0, log_every_steps=100,
        mixed_precision=precision, random_seed=FLAGS.seed, **budget(limit, FLAGS.average),
        **config,
    )  # fmt: skip
    result = train(
        registry.problem(problem_name),
        "transformer",
        registry.hparams(FLAGS.hparams_set).override(FLAGS.hparams),
        data_dir,
        output_dir,
        make_strategy("one_device"),
        settings,
        FLAGS.hparams_set,
    )
    return {
        "hparams_set": FLAGS.hparams_set,
        "hparams": FLAGS.hparams,
        "mixed_precision": precision,
        "steps": result.step,
        "train_seconds": round(result.seconds, 1),
        "target_tokens_per_second": round(result.target_tokens_per_second, 1),
        "loss_curve": [
            curve_point(point["step"], point["seconds"], point["target_tokens"], point["loss"])
            for point in result.loss_curve
        ],
    }
