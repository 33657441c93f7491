"""t2t-avg-checkpoints: averages the model weights of a training run's last checkpoints.

t2t-avg-checkpoints --output_dir=TRAIN --num_last_checkpoints=5

Writes the average as ckpt-<newest step> into --averaged_dir (TRAIN/averaged
by default) with copies of run.json, hparams.json and the vocabularies, so
`t2t-decoder --output_dir=TRAIN/averaged` decodes with it. Only the model's
weights are averaged; the optimizer state is dropped, so training cannot
resume from the average. An earlier average in --averaged_dir is replaced whole.
tensor2tensor's --prefix works as it did: prepended to each of --checkpoints,
and its directory is the training directory when --output_dir is not given.
"""

from __future__ import annotations

import os

from absl import flags

from t2t_keras.bin import flag_groups, program
from t2t_keras.errors import UserError

flag_groups.define_registry_flags()
flags.DEFINE_string(
    "problem", None, "If given, refuse checkpoints of a training on another problem."
)
flags.DEFINE_string("output_dir", None, "Training directory holding the checkpoints.")
flags.DEFINE_integer(
    "num_last_checkpoints",
    5,
    "Average this many of the newest checkpoints (the paper: 5 for base models, 20 for big).",
    lower_bound=1,
)
flags.DEFINE_list(
    "checkpoints",
    [],
    "Comma-separated checkpoint prefixes to average instead, e.g. TRAIN/ckpt-800,TRAIN/ckpt-900.",
)
flags.DEFINE_string(
    "prefix",
    "",
    "Prepended to each of --checkpoints (e.g. --prefix=TRAIN/ckpt- --checkpoints=800,900); "
    "its directory is the training directory if --output_dir is not given.",
)
flags.DEFINE_string(
    "averaged_dir", None, "Where to write the average; default <output_dir>/averaged."
)
FLAGS = flags.FLAGS


def main() -> int:
    if flag_groups.start():
        return 0
    from t2t_keras.training.averaging import average_checkpoints

    if FLAGS.checkpoints and FLAGS["num_last_checkpoints"].present:
        program.fail("give either --checkpoints or --num_last_checkpoints, not both.")
    output_dir = _output_dir()
    _check_problem(output_dir)
    checkpoints = [FLAGS.prefix + checkpoint for checkpoint in FLAGS.checkpoints]
    averaged = average_checkpoints(
        output_dir, FLAGS.num_last_checkpoints, checkpoints, FLAGS.averaged_dir
    )
    print(f"Averaged the model weights of {len(averaged.sources)} checkpoints:")
    for source in averaged.sources:
        print(f"  {source}")
    print(f"Wrote {averaged.checkpoint} (the optimizer state is not kept).")
    print("Decode with it:")
    print(
        f"  t2t-decoder --output_dir={averaged.directory} --decode_from_file=IN "
        "--decode_to_file=OUT"
    )
    return 0


def _output_dir() -> str:
    """--output_dir, or the directory of tensor2tensor's --prefix."""
    prefix_dir = os.path.dirname(os.path.expanduser(FLAGS.prefix))
    if not FLAGS.output_dir and prefix_dir:
        return prefix_dir
    output_dir = flag_groups.required(
        "output_dir", "the training directory holding the checkpoints"
    )
    if prefix_dir and not FLAGS.checkpoints and not _same_dir(output_dir, prefix_dir):
        program.fail(
            f"--prefix={FLAGS.prefix} names checkpoints in {prefix_dir}, but --output_dir is "
            f"{output_dir}; give one of them."
        )
    return output_dir


def _same_dir(first: str, second: str) -> bool:
    return os.path.abspath(os.path.expanduser(first)) == os.path.abspath(second)


def _check_problem(output_dir: str) -> None:
    """Refuses the training directory of another problem than --problem."""
    from t2t_keras.run.run_files import read_run

    run = read_run(os.path.expanduser(output_dir)) if FLAGS.problem else None
    if run is not None and run.get("problem") != FLAGS.problem:
        raise UserError(
            f"{output_dir} holds a training on problem {run.get('problem')!r}, not "
            f"{FLAGS.problem!r} (--problem); drop --problem or give that training's directory."
        )


def run() -> None:
    """Console entry point."""
    program.run(main)


if __name__ == "__main__":
    run()
