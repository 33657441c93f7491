"""t2t-trainer: trains a registered model on a registered problem.

    t2t-trainer --problem=translate_ende_wmt_bpe37k --hparams_set=transformer_base \
        --data_dir=DATA --output_dir=TRAIN [--hparams="dropout=0.2"]
"""

from __future__ import annotations

from absl import flags

from t2t_keras import registry
from t2t_keras.bin import common

common.define_flags(with_model=True)
flags.DEFINE_string("data_dir", None, "Directory of the problem's TFRecords and vocabulary.")
flags.DEFINE_string("output_dir", None, "Directory for checkpoints, hparams.json and summaries.")
FLAGS = flags.FLAGS


def main() -> int:
    if common.start():
        return 0
    common.resolve_problem()
    common.resolve_hparams()
    registry.model(FLAGS.model)
    common.unavailable("training")


def run() -> None:
    """Console entry point."""
    common.run(main)


if __name__ == "__main__":
    run()
