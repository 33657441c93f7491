"""t2t-avg-checkpoints: averages the model weights of a training run's last checkpoints.

t2t-avg-checkpoints --output_dir=TRAIN --num_last_checkpoints=5

Writes the average as ckpt-<newest step> into --averaged_dir (TRAIN/averaged
by default) with copies of run.json, hparams.json and the vocabularies, so
`t2t-decoder --output_dir=TRAIN/averaged` decodes with it. Only the model's
weights are averaged; the optimizer state is dropped, so training cannot
resume from the average. An earlier average in --averaged_dir is replaced whole.
"""

from __future__ import annotations

from absl import flags

from t2t_keras.bin import common
from t2t_keras.training.averaging import average_checkpoints

common.define_flags(with_model=False)
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
    "averaged_dir", None, "Where to write the average; default <output_dir>/averaged."
)
FLAGS = flags.FLAGS


def main() -> int:
    if common.start():
        return 0
    output_dir = common.required("output_dir", "the training directory holding the checkpoints")
    if FLAGS.checkpoints and FLAGS["num_last_checkpoints"].present:
        common.fail("give either --checkpoints or --num_last_checkpoints, not both.")
    averaged = average_checkpoints(
        output_dir, FLAGS.num_last_checkpoints, FLAGS.checkpoints, FLAGS.averaged_dir
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


def run() -> None:
    """Console entry point."""
    common.run(main)


if __name__ == "__main__":
    run()
