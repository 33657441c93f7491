r"""t2t-trainer: trains a registered model on a registered problem.

    t2t-trainer --problem=translate_ende_wmt_bpe37k --hparams_set=transformer_base \
        --data_dir=DATA --output_dir=TRAIN [--hparams="dropout=0.2"] [--train_steps=100000]

Rerunning the same command resumes from the newest checkpoint in --output_dir.
On SIGTERM (or --termination_signal) it saves the step it is at and exits with
status 143; rerun the same command to resume.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from absl import flags

from t2t_keras import modes, registry
from t2t_keras.bin import flag_groups, program
from t2t_keras.errors import UserError
from t2t_keras.termination import RESTARTABLE_EXIT_CODE, Termination, parse_signal

if TYPE_CHECKING:
    from t2t_keras.training.config import TrainConfig


flag_groups.define_registry_flags()
flag_groups.define_problem_flag()
flag_groups.define_model_flags()
flag_groups.define_data_flags()
flag_groups.define_source_flags()
flags.DEFINE_bool(
    "generate_data",
    False,
    "First generate the problem's data into --data_dir (as t2t-datagen does; what is "
    "already there is kept).",
)
flags.DEFINE_string("output_dir", None, "Directory for checkpoints, hparams.json and summaries.")
flags.DEFINE_string(
    "warm_start_from",
    None,
    "Fine-tune: a fresh run starts from this trained run's model weights (its --output_dir, "
    "its averaged directory, or a checkpoint prefix), with its own optimizer, step and "
    "schedule; the data must use the parent's vocabulary (t2t-datagen --vocab_from) and the "
    "hparams its weights' shapes (without --hparams_set: the parent's hparams, with "
    "--hparams). Ignored when --output_dir already holds checkpoints.",
)
flags.DEFINE_bool(
    "warm_start_optimizer",
    False,
    "With --warm_start_from: also take the parent's optimizer state and step, so that the "
    "learning-rate schedule goes on from the parent's step (--train_steps counts from there); "
    "the parent must be a training checkpoint, not an averaged one.",
)
flags.DEFINE_integer("train_steps", 250_000, "Train until the global step reaches this.")
flags.DEFINE_integer("eval_steps", 100, "Dev batches per evaluation; 0 = the whole dev split.")
flags.DEFINE_integer(
    "eval_every_steps", 1000, "Evaluate every this many steps (and at the end); 0 = at the end."
)
flags.DEFINE_integer(
    "eval_bleu_examples",
    100,
    "Dev sentences decoded with beam search for sacreBLEU at each evaluation; 0 = no BLEU.",
)
flags.DEFINE_integer(
    "save_checkpoints_steps", 1000, "Save a checkpoint every this many steps; 0 = by time only."
)
flags.DEFINE_integer(
    "save_checkpoints_secs", 0, "Also save when this many seconds passed since the last save."
)
flags.DEFINE_integer("keep_checkpoint_max", 20, "Checkpoints kept, the newest.")
flags.DEFINE_integer(
    "average_checkpoints",
    0,
    "At the end, average the weights of the newest N checkpoints into OUTPUT_DIR/averaged, "
    "as the paper decoded (5 for base, 20 for big); 0 = don't.",
)
flags.DEFINE_integer(
    "log_step_count_steps", 100, "Print progress and write summaries every this many steps."
)
flags.DEFINE_integer("random_seed", None, "Seed of initialization, dropout and shuffling.")
flags.DEFINE_bool(
    "deterministic",
    False,
    "Deterministic ops and input order (slower); a resumed run then continues the input "
    "order where it stopped and ends with the weights of a run never interrupted.",
)
flags.DEFINE_bool(
    "skip_corrupt_records",
    False,
    "Read a damaged TFRecord shard up to its first bad record and train on (reporting the "
    "records lost) instead of stopping with an error naming the shard.",
)
flags.DEFINE_enum(
    "distribution_strategy",
    "mirrored",
    modes.STRATEGIES,
    "mirrored: every local GPU (or CPU device); multi_worker_mirrored: the cluster in "
    "TF_CONFIG; one_device; tpu.",
)
flags.DEFINE_integer("num_gpus", 0, "Local GPUs to use; 0 = all.")
flags.DEFINE_integer(
    "cpu_devices",
    0,
    "Split the CPU into this many logical devices (to try mirrored training without GPUs); "
    "0 = leave it whole.",
)
flag_groups.define_xla_flag("attention")
flags.DEFINE_enum(
    "mixed_precision", modes.PRECISION_AUTO, modes.PRECISION_CHOICES, modes.PRECISION_HELP
)
flags.DEFINE_list(
    "profile_steps", None, "FIRST,LAST: trace these steps with the TensorFlow profiler."
)
flags.DEFINE_string(
    "termination_signal",
    None,
    "A signal handled like SIGTERM (always handled): save the step being trained and exit "
    f"with status {RESTARTABLE_EXIT_CODE}; e.g. SIGUSR1 with SLURM's --signal=USR1@120.",
)
FLAGS = flags.FLAGS

# Caught from the start (`run`), before TensorFlow loads: no signal goes unanswered.
_TERMINATION = Termination()


def main() -> int:
    if FLAGS.termination_signal:
        _TERMINATION.add_signal(parse_signal(FLAGS.termination_signal))
    if FLAGS.distribution_strategy == "multi_worker_mirrored":
        _TERMINATION.coordinate()  # All workers stop together, at one step.
    if flag_groups.start():
        return 0
    from t2t_keras.training import make_strategy, split_cpu
    from t2t_keras.training.trainer import train

    problem = flag_groups.resolve_problem()
    hparams = _hparams()
    registry.model(FLAGS.model)
    output_dir = flag_groups.required("output_dir", "the directory for checkpoints and summaries")
    config = _config()
    if FLAGS.generate_data:
        flag_groups.generate_data(problem)
    data_dir = flag_groups.required(
        "data_dir", "the directory of the problem's shards", " t2t-datagen writes them."
    )
    if FLAGS.cpu_devices:
        split_cpu(FLAGS.cpu_devices)
    strategy = make_strategy(FLAGS.distribution_strategy, FLAGS.num_gpus)
    # auto times a matrix product, which starts TensorFlow's runtime: only once
    # the devices are split and the strategy made.
    config = dataclasses.replace(config, mixed_precision=_mixed_precision(output_dir))
    train(
        problem, FLAGS.model, hparams, data_dir, output_dir, strategy, config,
        FLAGS.hparams_set, _TERMINATION,
    )  # fmt: skip
    return 0


def _hparams() -> Any:
    """--hparams_set with --hparams; with --warm_start_from and no --hparams_set, the
    parent's hparams with --hparams (an imported model's, which no registered set has)."""
    if FLAGS.hparams_set or not FLAGS.warm_start_from:
        return flag_groups.resolve_hparams()
    from absl import logging

    from t2t_keras.training.warm_start import find_parent

    parent = find_parent(FLAGS.warm_start_from)
    logging.info("No --hparams_set: the hparams of %s, with --hparams.", parent.directory)
    return parent.hparams.override(FLAGS.hparams)


def _mixed_precision(output_dir: str) -> str:
    """--mixed_precision, auto resolved for the devices found (and logged).

    A run resumed with auto keeps the precision it started with (run.json):
    auto's timed product could choose otherwise on a busy machine, and a run
    must end as if never interrupted.
    """
    from absl import logging

    from t2t_keras.run.run_files import read_run
    from t2t_keras.training.hardware import resolve_mixed_precision

    started = (read_run(output_dir) or {}).get("mixed_precision")
    if FLAGS.mixed_precision == modes.PRECISION_AUTO and started in modes.PRECISIONS:
        logging.info("Mixed precision: auto: %s, as this run started (run.json).", started)
        return str(started)
    precision, why = resolve_mixed_precision(FLAGS.mixed_precision)
    logging.info("Mixed precision: %s.", why)
    return precision


def _config() -> TrainConfig:
    from t2t_keras.training.config import TrainConfig

    profile_steps = None
    if FLAGS.profile_steps:
        try:
            first, last = (int(step) for step in FLAGS.profile_steps)
        except ValueError:
            raise UserError(
                f"--profile_steps={','.join(FLAGS.profile_steps)} is not two step numbers; "
                "give FIRST,LAST, e.g. --profile_steps=10,20."
            ) from None
        profile_steps = (first, last)
    return TrainConfig(
        train_steps=FLAGS.train_steps,
        eval_steps=FLAGS.eval_steps,
        eval_every_steps=FLAGS.eval_every_steps,
        eval_bleu_examples=FLAGS.eval_bleu_examples,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        save_checkpoints_secs=FLAGS.save_checkpoints_secs,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        average_checkpoints=FLAGS.average_checkpoints,
        log_every_steps=FLAGS.log_step_count_steps,
        random_seed=FLAGS.random_seed,
        deterministic=FLAGS.deterministic,
        skip_corrupt_records=FLAGS.skip_corrupt_records,
        xla=FLAGS.xla,
        mixed_precision="off",  # --mixed_precision is resolved once the strategy is made.
        profile_steps=profile_steps,
        warm_start_from=FLAGS.warm_start_from,
        warm_start_optimizer=FLAGS.warm_start_optimizer,
    )


def run() -> None:
    """Console entry point."""
    with _TERMINATION:
        program.run(main)


if __name__ == "__main__":
    run()
