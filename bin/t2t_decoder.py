"""t2t-decoder: translates with a trained model.

t2t-decoder --output_dir=TRAIN --decode_from_file=IN --decode_to_file=OUT
"""

from __future__ import annotations

from absl import flags

from t2t_keras import registry
from t2t_keras.bin import common

common.define_flags(with_model=True)
flags.DEFINE_string("data_dir", None, "Directory of the problem's vocabulary.")
flags.DEFINE_string("output_dir", None, "Training directory holding the checkpoints.")
FLAGS = flags.FLAGS


def main() -> int:
    if common.start():
        return 0
    common.resolve_problem()
    common.resolve_hparams()
    registry.model(FLAGS.model)
    common.unavailable("decoding")


def run() -> None:
    """Console entry point."""
    common.run(main)


if __name__ == "__main__":
    run()
