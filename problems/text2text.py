"""Your own parallel corpus as plain text files: text2text_tmpdir."""

from __future__ import annotations

import os
from collections.abc import Iterator

from t2t_keras import registry
from t2t_keras.data.corpus import read_parallel
from t2t_keras.data.text_problem import Sample, Text2TextProblem
from t2t_keras.errors import UserError


@registry.register_problem
class Text2textTmpdir(Text2TextProblem):
    """Your parallel corpus: tmp_dir/{train,dev,test}.{src,tgt}, one sentence per line."""

    approx_vocab_size = 2**13
    dataset_splits = {"train": 4, "dev": 1, "test": 1}  # noqa: RUF012

    def split_available(self, tmp_dir: str, split: str) -> bool:
        """The test split is optional: generated only when test.src is there."""
        return split != "test" or os.path.exists(os.path.join(tmp_dir, "test.src"))

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        source, target = (os.path.join(tmp_dir, f"{split}.{side}") for side in ("src", "tgt"))
        for path in (source, target):
            if not os.path.isfile(path):
                raise UserError(
                    f"{path} is missing: text2text_tmpdir reads a parallel corpus from "
                    "--tmp_dir as train.src/train.tgt and dev.src/dev.tgt (test.src/test.tgt "
                    "optional), UTF-8, one sentence per line, line n of .src translating "
                    "line n of .tgt."
                )
        for inputs, targets in read_parallel(source, target):
            yield {"inputs": inputs, "targets": targets}


@registry.register_problem
class Text2textTmpdirTwoVocabs(Text2textTmpdir):
    """text2text_tmpdir with a vocabulary a side: an imported Marian model's (t2t-importer),
    whose data t2t-datagen --vocab_from encodes with its source and target models."""

    shared_vocab = False
