"""English constituency parsing on the WSJ part of the Penn Treebank, as in the paper.

The Penn Treebank is licensed by the LDC (LDC99T42) and is not downloaded:
point --tmp_dir at your copy's `parsed/mrg/wsj` directory (or anything above
it); every `wsj_SSNN.mrg` file below it is read. The standard split: sections
02-21 train (~40K sentences), 22 dev, 23 test. Inputs are the words, targets
the linearized tree (see `t2t_keras.data.trees`).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator

from t2t_keras import registry
from t2t_keras.data import corpus, trees
from t2t_keras.data.text_problem import Sample, Text2TextProblem
from t2t_keras.errors import UserError

SECTIONS = {"train": range(2, 22), "dev": range(22, 23), "test": range(23, 24)}
_FILE = re.compile(r"wsj_(\d\d)\d\d\.mrg$")


def wsj_files(tmp_dir: str, split: str) -> list[str]:
    """The split's .mrg files under tmp_dir, in section and file order."""
    paths = glob.glob(os.path.join(glob.escape(tmp_dir), "**", "wsj_*.mrg"), recursive=True)
    chosen = [
        path
        for path in paths
        if (match := _FILE.search(path)) and int(match.group(1)) in SECTIONS[split]
    ]
    if not chosen:
        first, last = SECTIONS[split][0], SECTIONS[split][-1]
        raise UserError(
            f"No WSJ {split} trees under {tmp_dir}: parsing reads the Penn Treebank's "
            f"wsj_SSNN.mrg files, sections {first:02d}-{last:02d} for {split}. The treebank "
            "is licensed by the LDC (LDC99T42) and cannot be downloaded: point --tmp_dir "
            "at your copy's parsed/mrg/wsj directory."
        )
    return sorted(chosen, key=os.path.basename)


def tree_samples(path: str) -> Iterator[Sample]:
    """{"inputs": words, "targets": linearized tree} for each tree of a .mrg file."""
    lines = (
        corpus.decode_line(raw, path, number)
        for number, raw in enumerate(corpus.read_lines(path), start=1)
    )
    try:
        for text in trees.read_trees(lines):
            tree = trees.clean(trees.parse_tree(text))
            if tree is not None:
                yield {"inputs": " ".join(tree.words()), "targets": trees.linearize(tree)}
    except trees.TreeError as error:
        raise UserError(f"{path}: {error} The .mrg files must hold bracketed trees.") from None


@registry.register_problem
class ParsingEnglishWsj16k(Text2TextProblem):
    """WSJ constituency parsing: words -> linearized tree, 16K vocabulary (the paper's)."""

    approx_vocab_size = 16_000
    dataset_splits = {"train": 10, "dev": 1, "test": 1}  # noqa: RUF012

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        for path in wsj_files(tmp_dir, split):
            yield from tree_samples(path)

    def eval_metrics(self) -> list[str]:
        return ["bracket_f1"]
