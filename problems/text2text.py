"""Your own parallel corpus as plain text files: text2text_tmpdir."""

from __future__ import annotations

import os
from collections.abc import Iterator

from t2t_keras import registry
from t2t_keras.data.text_problem import Sample, Text2TextProblem
from t2t_keras.errors import UserError


def read_parallel(source_path: str, target_path: str) -> Iterator[tuple[str, str]]:
    """Streams aligned (source line, target line) pairs, stripped of the newline.

    Raises:
      UserError: a missing file, invalid UTF-8 (naming file and line), or
        files of different line counts.
    """
    for path in (source_path, target_path):
        if not os.path.isfile(path):
            raise UserError(
                f"{path} is missing: text2text_tmpdir reads a parallel corpus from "
                "--tmp_dir as train.src/train.tgt and dev.src/dev.tgt (test.src/test.tgt "
                "optional), one sentence per line, line n of .src translating line n of .tgt."
            )
    with open(source_path, "rb") as sources, open(target_path, "rb") as targets:
        line = 0
        while True:
            line += 1
            source, target = sources.readline(), targets.readline()
            if not source and not target:
                return
            if not source or not target:
                shorter = source_path if not source else target_path
                raise UserError(
                    f"{source_path} and {target_path} have different line counts: "
                    f"{shorter} ends at line {line - 1}. Every source line needs its "
                    "target line."
                )
            yield _text(source, source_path, line), _text(target, target_path, line)


def _text(raw: bytes, path: str, line: int) -> str:
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as error:
        raise UserError(
            f"{path}, line {line}: invalid UTF-8 ({error.reason} at byte {error.start}); "
            "the corpus files must be UTF-8 text."
        ) from None


@registry.register_problem
class Text2textTmpdir(Text2TextProblem):
    """Your parallel corpus: tmp_dir/{train,dev}.{src,tgt}, one sentence per line."""

    approx_vocab_size = 2**13
    dataset_splits = {"train": 4, "dev": 1}  # noqa: RUF012

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        source, target = (os.path.join(tmp_dir, f"{split}.{side}") for side in ("src", "tgt"))
        for inputs, targets in read_parallel(source, target):
            yield {"inputs": inputs, "targets": targets}
