"""t2t-datagen: writes a registered problem's vocabulary and TFRecord shards.

t2t-datagen --problem=translate_ende_wmt_bpe37k --data_dir=DATA --tmp_dir=TMP
"""

from __future__ import annotations

import os
import tempfile

from absl import flags

from t2t_keras.bin import common

common.define_flags(with_model=False)
flags.DEFINE_string("data_dir", None, "Directory for the vocabulary and TFRecord shards.")
flags.DEFINE_string(
    "tmp_dir",
    os.path.join(tempfile.gettempdir(), "t2t_datagen"),
    "Directory for downloads and raw corpora (files already there are not downloaded again).",
)
FLAGS = flags.FLAGS


def main() -> int:
    if common.start():
        return 0
    problem = common.resolve_problem()
    data_dir = common.required("data_dir", "the directory to write the vocabulary and shards to")
    problem.generate_data(os.path.expanduser(data_dir), os.path.expanduser(FLAGS.tmp_dir))
    return 0


def run() -> None:
    """Console entry point."""
    common.run(main)


if __name__ == "__main__":
    run()
