"""Local stand-ins for downloads: WMT-layout archives, and a real tensorflow-datasets
builder of wmt14_translate that reads local files.

It writes a dataset under the name, config and version of TFDS's own
wmt14_translate/<xx>-en into a data directory, from plain-text files
`<split>.en` and `<split>.<xx>` (splits train, validation, test), so that
`tfds.load("wmt14_translate/de-en", data_dir=...)` then reads it as it reads
the real one: offline tests and benchmarks of the TFDS source. Importable
from tests (pyproject.toml puts tests/ on the path) and benchmarks; a
package, as TFDS looks its builders' resources up by package.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import tensorflow_datasets as tfds

SPLITS = ("train", "validation", "test")


class LocalWmt14(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """wmt14_translate as TFDS lays it out, built from files in a local folder."""

    name = "wmt14_translate"
    VERSION = tfds.core.Version("1.0.0")
    BUILDER_CONFIGS = [  # noqa: RUF012
        tfds.core.BuilderConfig(name=f"{language}-en") for language in ("de", "fr")
    ]

    def __init__(self, *, corpus_dir: Path, **kwargs: Any) -> None:
        self.corpus_dir = corpus_dir
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        pair = tuple(self.builder_config.name.split("-"))
        return self.dataset_info_from_configs(
            features=tfds.features.Translation(languages=pair), supervised_keys=pair
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Iterator[tuple[int, dict]]]:
        return {split: self._generate_examples(split) for split in SPLITS}

    def _generate_examples(self, split: str) -> Iterator[tuple[int, dict[str, bytes]]]:
        other = self.builder_config.name.split("-")[0]
        # Bytes as they are, so a test can hold text that is not UTF-8, as web crawls do.
        lines = {
            language: (self.corpus_dir / f"{split}.{language}").read_bytes().splitlines()
            for language in ("en", other)
        }
        for index, pair in enumerate(zip(lines["en"], lines[other], strict=True)):
            yield index, {"en": pair[0], other: pair[1]}


def write_wmt14(corpus_dir: Path, data_dir: Path, pair: str = "de-en") -> None:
    """Prepares wmt14_translate/<pair> in TFDS's data_dir from corpus_dir's files."""
    LocalWmt14(corpus_dir=corpus_dir, data_dir=str(data_dir), config=pair).download_and_prepare()


def write_archive(path: Path, members: dict[str, list[str]], sgm: bool = False) -> None:
    """A .tgz holding each member's lines, one a line or as WMT SGML segments."""
    with tarfile.open(path, "w:gz") as tar:
        for name, lines in members.items():
            if sgm:
                segments = "".join(f'<seg id="{i}">{line}</seg>\n' for i, line in enumerate(lines))
                text = (
                    f'<refset setid="newstest2014">\n<doc docid="1">\n{segments}</doc>\n</refset>\n'
                )
            else:
                text = "".join(f"{line}\n" for line in lines)
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
