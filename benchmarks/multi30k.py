"""Multi30k from ../shared/data laid out as text2text_tmpdir expects, for the benchmarks."""

from __future__ import annotations

import os
import shutil

from absl import flags

flags.DEFINE_string(
    "shared_data",
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"),
    "Folder holding multi30k/.",
)


def prepare_tmp_dir(tmp_dir: str) -> None:
    """Copies Multi30k's train and val (En->De) into tmp_dir as train/dev .src/.tgt."""
    corpus = os.path.join(flags.FLAGS.shared_data, "multi30k")
    for split, name in (("train", "train"), ("dev", "val")):
        for side, language in (("src", "en"), ("tgt", "de")):
            shutil.copy(os.path.join(corpus, f"{name}.{language}"), f"{tmp_dir}/{split}.{side}")
