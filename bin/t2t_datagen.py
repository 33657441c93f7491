"""t2t-datagen: writes a registered problem's vocabulary and TFRecord shards.

t2t-datagen --problem=translate_ende_wmt_bpe37k --data_dir=DATA --tmp_dir=TMP
"""

from __future__ import annotations

from absl import flags

from t2t_keras.bin import common

common.define_flags(with_model=False)
flags.DEFINE_string("data_dir", None, "Directory for the vocabulary and TFRecord shards.")
flags.DEFINE_string("tmp_dir", None, "Directory for downloads and raw corpora.")
FLAGS = flags.FLAGS


def main() -> int:
    if common.start():
        return 0
    common.resolve_problem()
    common.unavailable("data generation")


def run() -> None:
    """Console entry point."""
    common.run(main)


if __name__ == "__main__":
    run()
