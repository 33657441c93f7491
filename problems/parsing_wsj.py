"""English constituency parsing on the WSJ part of the Penn Treebank, as in the paper.

The Penn Treebank is licensed by the LDC (LDC99T42) and is not downloaded;
--tmp_dir holds your copy in either of the layouts users have:

  one tree a line  `train.trees`, `dev.trees`, `test.trees` in tmp_dir, or the
                   names most parsing repositories use: `02-21.10way.clean`,
                   `22.auto.clean`, `23.auto.clean`
  LDC directory    the `parsed/mrg/wsj` directory (or anything above it): every
                   `wsj_SSNN.mrg` below it, sections 02-21 train, 22 dev, 23 test

The layout is found per split: a one-tree-a-line file in tmp_dir is used if
there is one, else the .mrg files. Malformed trees are reported with their
file and line and skipped (`t2t_keras.data.parsing_problem`).

The semi-supervised problem adds silver trees the user supplies (the paper
parsed 17M sentences with the BerkeleyParser): every `silver*.trees` file in
tmp_dir, one tree a line, joins WSJ's training trees.
"""

from __future__ import annotations

import glob
import os
import re

from absl import logging

from t2t_keras import registry
from t2t_keras.data import ParsingProblem
from t2t_keras.errors import UserError

SECTIONS = {"train": range(2, 22), "dev": range(22, 23), "test": range(23, 24)}
LINE_FILES = {
    "train": ("train.trees", "02-21.10way.clean"),
    "dev": ("dev.trees", "22.auto.clean"),
    "test": ("test.trees", "23.auto.clean"),
}
SILVER_PATTERN = "silver*.trees"
_MRG_FILE = re.compile(r"wsj_(\d\d)\d\d\.mrg$")


def wsj_files(tmp_dir: str, split: str) -> list[str]:
    """The split's treebank files under tmp_dir: its one-tree-a-line file, else its .mrg files."""
    for name in LINE_FILES[split]:
        path = os.path.join(tmp_dir, name)
        if os.path.isfile(path):
            logging.info("WSJ %s: one tree a line from %s.", split, path)
            return [path]
    paths = glob.glob(os.path.join(glob.escape(tmp_dir), "**", "wsj_*.mrg"), recursive=True)
    chosen = [
        path
        for path in paths
        if (match := _MRG_FILE.search(path)) and int(match.group(1)) in SECTIONS[split]
    ]
    if not chosen:
        first, last = SECTIONS[split][0], SECTIONS[split][-1]
        raise UserError(
            f"No WSJ {split} trees under {tmp_dir}: give either a file of one tree a line, "
            f"{' or '.join(LINE_FILES[split])}, in --tmp_dir, or the Penn Treebank's "
            f"wsj_SSNN.mrg files (sections {first:02d}-{last:02d} for {split}) below it. The "
            "treebank is licensed by the LDC (LDC99T42) and cannot be downloaded: point "
            "--tmp_dir at your copy's parsed/mrg/wsj directory or at your tree files."
        )
    logging.info("WSJ %s: %d .mrg files under %s.", split, len(chosen), tmp_dir)
    return sorted(chosen, key=os.path.basename)


@registry.register_problem
class ParsingEnglishWsj16k(ParsingProblem):
    """WSJ constituency parsing: words -> linearized tree, 16K vocabulary (the paper's)."""

    approx_vocab_size = 16_000

    def tree_files(self, tmp_dir: str, split: str) -> list[str]:
        return wsj_files(tmp_dir, split)


@registry.register_problem
class ParsingEnglishWsjSemisup32k(ParsingProblem):
    """WSJ plus the user's silver trees (`silver*.trees`), shared 32K vocabulary (the paper's)."""

    approx_vocab_size = 32_000
    dataset_splits = {"train": 100, "dev": 1, "test": 1}  # noqa: RUF012

    def tree_files(self, tmp_dir: str, split: str) -> list[str]:
        if split != "train":
            return wsj_files(tmp_dir, split)
        silver = sorted(glob.glob(os.path.join(glob.escape(tmp_dir), SILVER_PATTERN)))
        if not silver:
            raise UserError(
                f"No silver trees in {tmp_dir}: {self.data_name} trains on WSJ plus trees "
                f"you supply, in files named {SILVER_PATTERN} in --tmp_dir, one PTB tree a "
                "line (the paper used 17M sentences parsed by the BerkeleyParser). Without "
                "them, use parsing_english_wsj16k."
            )
        return [*wsj_files(tmp_dir, split), *silver]
