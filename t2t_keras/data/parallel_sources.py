"""Where parallel text comes from: plain-text files, tensorflow-datasets, or WMT archives.

Each source streams (source sentence, target sentence) pairs of one split,
so memory stays bounded whatever the corpus size:

  - `LocalFiles`: `<stem>.<language>` files in tmp_dir (optionally gzipped),
    one sentence a line, e.g. train.en / train.de;
  - `TfdsTranslation`: a tensorflow-datasets translation dataset, prepared
    by TFDS's own download and cache, read with `as_supervised=True`;
  - `ParallelCorpus`: one corpus inside a downloadable archive.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

from t2t_keras.data import corpus
from t2t_keras.errors import UserError

Pair = tuple[str, str]


@dataclasses.dataclass(frozen=True)
class ParallelCorpus:
    """A parallel corpus inside a downloadable archive.

    Attributes:
      url: the archive (tar, any compression).
      source: the source side's path inside the archive.
      target: the target side's path inside the archive.
      sgm: the sides are WMT SGML files rather than one sentence per line.
    """

    url: str
    source: str
    target: str
    sgm: bool = False

    @property
    def archive_name(self) -> str:
        """The archive's file name in tmp_dir."""
        return os.path.basename(self.url)

    def pairs(self, tmp_dir: str) -> Iterator[Pair]:
        """Downloads and extracts what is missing, then streams (source, target) pairs."""
        archive = corpus.maybe_download(tmp_dir, self.archive_name, self.url)
        source, target = (
            corpus.extract_member(archive, member, tmp_dir) for member in (self.source, self.target)
        )
        if not self.sgm:
            yield from corpus.read_parallel(source, target)
            return
        sources, targets = list(corpus.read_sgm(source)), list(corpus.read_sgm(target))
        if len(sources) != len(targets):
            raise UserError(
                f"{source} has {len(sources)} segments but {target} has {len(targets)}; "
                "every source segment needs its reference: delete both to extract them anew."
            )
        yield from zip(sources, targets, strict=True)


@dataclasses.dataclass(frozen=True)
class LocalFiles:
    """Plain text in tmp_dir: `<stem>.<language>` (or `.gz`) per split and side.

    Attributes:
      languages: (source language, target language), the files' suffixes.
      stems: each split's file stem, e.g. {"train": "train", "dev": "newstest2013"}.
    """

    languages: tuple[str, str]
    stems: dict[str, str]

    def paths(self, tmp_dir: str, split: str) -> tuple[str, str]:
        """The split's (source, target) files; a gzipped copy counts when the plain one is absent."""
        return tuple(  # type: ignore[return-value]
            _plain_or_gzipped(os.path.join(tmp_dir, f"{self.stems[split]}.{language}"))
            for language in self.languages
        )

    def has(self, tmp_dir: str, split: str) -> bool:
        """Whether both of the split's files are in tmp_dir."""
        return all(os.path.isfile(path) for path in self.paths(tmp_dir, split))

    def names(self) -> str:
        """The expected files, for messages: "train.{en,de}, newstest2013.{en,de}, ..."."""
        sides = ",".join(self.languages)
        return ", ".join(f"{stem}.{{{sides}}}" for stem in self.stems.values())

    def check(self, tmp_dir: str, split: str) -> None:
        """Raises a UserError naming the split's missing file and the files expected."""
        for path in self.paths(tmp_dir, split):
            if not os.path.isfile(path):
                raise UserError(
                    f"{path} is missing. Plain-text corpora in --tmp_dir {tmp_dir} are "
                    f"{self.names()}: one sentence a line, the two sides of a pair on the "
                    "same line number (gzipped files may end in .gz)."
                )

    def pairs(self, tmp_dir: str, split: str) -> Iterator[Pair]:
        """Streams the split's aligned lines; a missing file is an error naming the rest."""
        self.check(tmp_dir, split)
        yield from corpus.read_parallel(*self.paths(tmp_dir, split))


def _plain_or_gzipped(path: str) -> str:
    return path if os.path.isfile(path) or not os.path.isfile(f"{path}.gz") else f"{path}.gz"


@dataclasses.dataclass(frozen=True)
class TfdsTranslation:
    """A tensorflow-datasets translation dataset, e.g. "wmt14_translate/de-en".

    Attributes:
      name: the dataset and config as `tfds.load` takes them.
      languages: (source language, target language), the dataset's feature names.
      splits: our split -> the dataset's, e.g. {"dev": "validation"}.
      help: what to do instead when TFDS cannot prepare the dataset (no network).
      download_url: one of the files TFDS downloads, tried first for a few
        seconds: without network TFDS retries for minutes before it fails.
    """

    name: str
    languages: tuple[str, str]
    splits: dict[str, str]
    help: str = ""
    download_url: str = ""

    def pairs(self, data_dir: str | None, split: str) -> Iterator[Pair]:
        """Streams the split's (source, target) pairs, preparing the dataset first if needed.

        Args:
          data_dir: TFDS's data directory; None = TFDS's default (~/tensorflow_datasets,
            or $TFDS_DATA_DIR).
          split: "train", "dev" or "test".
        """
        import tensorflow_datasets as tfds

        self.prepare(data_dir)
        dataset, info = tfds.load(
            self.name,
            split=self.splits[split],
            data_dir=data_dir,
            as_supervised=True,
            with_info=True,
            download=False,
        )
        keys = info.supervised_keys
        source, target = (keys.index(language) for language in self.languages)
        # Batches cross into Python with less overhead: 4x the pairs/s of single pairs.
        for batch in dataset.batch(1024).prefetch(2).as_numpy_iterator():
            for inputs, targets in zip(batch[source], batch[target], strict=True):
                # As the local files' reader does: bytes that are not UTF-8 stay
                # readable, and datagen skips and counts such pairs.
                yield (
                    inputs.decode("utf-8", "surrogateescape"),
                    targets.decode("utf-8", "surrogateescape"),
                )

    def prepare(self, data_dir: str | None) -> None:
        """Downloads and prepares the dataset with TFDS unless it is ready in data_dir.

        Raises:
          UserError: TFDS could not prepare it (no network, say), in one
            paragraph that says what to do instead.
        """
        import tensorflow_datasets as tfds

        builder = tfds.builder(self.name, data_dir=data_dir)
        if _is_prepared(builder):
            return
        try:
            if self.download_url:
                _reach(self.download_url)
            builder.download_and_prepare()
        except Exception as error:  # TFDS's download errors have no common base.
            if isinstance(error, OSError) and error.errno in _DISK_FULL:
                raise UserError(
                    f"tensorflow-datasets could not write {self.name} in {builder.data_dir} "
                    f"({error}). Free space there, or choose another --tfds_data_dir."
                ) from None
            reason = " ".join(str(error).split())[:300]
            raise UserError(
                f"tensorflow-datasets could not prepare {self.name} in {builder.data_dir} "
                f"({type(error).__name__}: {reason}). {self.help}"
            ) from None


_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _reach(url: str, timeout_seconds: float = 15.0) -> None:
    """Raises an OSError unless the server of url answers within the timeout."""
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=timeout_seconds):
            pass
    except urllib.error.HTTPError:
        pass  # The server answered: the network is there.


def _is_prepared(builder: Any) -> bool:
    """Whether a TFDS builder's data is on disk (its dataset_info.json is written last)."""
    return os.path.isfile(os.path.join(str(builder.data_dir), "dataset_info.json"))
