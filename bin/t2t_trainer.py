"""t2t-trainer: trains a registered model on a registered problem.

    t2t-trainer --problem=translate_ende_wmt_bpe37k --hparams_set=transformer_base \
        --data_dir=DATA --output_dir=TRAIN [--hparams="dropout=0.2"]
"""

from __future__ import annotations

from absl import flags

from t2t_keras import registry
from t2t_keras.bin import common

common.define_flags(with_model=True)
common.define_data_flags()
flags.DEFINE_bool(
    "generate_data",
    False,
    "First generate the problem's data into --data_dir (as t2t-datagen does; what is "
    "already there is kept).",
)
flags.DEFINE_string("output_dir", None, "Directory for checkpoints, hparams.json and summaries.")
FLAGS = flags.FLAGS


def main() -> int:
    if common.start():
        return 0
    problem = common.resolve_problem()
    common.resolve_hparams()
    registry.model(FLAGS.model)
    if FLAGS.generate_data:
        common.generate_data(problem)
    common.unavailable("training")


def run() -> None:
    """Console entry point."""
    common.run(main)


if __name__ == "__main__":
    run()
