"""TranslateProblem: a translation problem whose corpus has several sources.

The same corpus can come from three places, tried in this order when the
source is "auto" (t2t-datagen's --data_source):

  1. local: plain text in --tmp_dir, e.g. train.{en,de}, newstest2013.{en,de}
     and newstest2014.{en,de} (`LocalFiles`); used whenever the training
     files are there;
  2. archives: the WMT archives, when any of them is already in --tmp_dir;
  3. tfds: the tensorflow-datasets dataset (`TfdsTranslation`), prepared by
     TFDS's own download and cache (--tfds_data_dir);

and "archives" downloads the archives that are missing. The source that
built a data_dir is recorded beside its shards (`<problem>-source.json`):
later runs keep to it, and naming another source for that data_dir is an
error, so shards of two sources never mix. The test split's text is also
written as plain files in data_dir (`newstest2014.en` and `.de`), for
t2t-bleu and t2t-decoder --decode_from_file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

from absl import logging

from t2t_keras.data import records
from t2t_keras.data.parallel_sources import LocalFiles, ParallelCorpus, TfdsTranslation
from t2t_keras.data.text_problem import Sample, Text2TextProblem
from t2t_keras.errors import UserError
from t2t_keras.files import write_atomically
from t2t_keras.modes import DATA_SOURCE_AUTO, DATA_SOURCES

AUTO, SOURCES = DATA_SOURCE_AUTO, DATA_SOURCES
LOCAL, TFDS, ARCHIVES = SOURCES


class TranslateProblem(Text2TextProblem):
    """Translation from local files, tensorflow-datasets or archives; subclasses name them.

    Args:
      was_reversed: translate the other way, from the same files.
      data_source: "auto" (the order of the module's docstring), "local",
        "tfds" or "archives".
      tfds_data_dir: TFDS's data directory; None = TFDS's default.
    """

    # Plain text in tmp_dir; its train files make "auto" choose it.
    local_files: LocalFiles | None = None
    # The tensorflow-datasets dataset of the same corpus.
    tfds_dataset: TfdsTranslation | None = None
    # The archives, per split.
    corpora: dict[str, tuple[ParallelCorpus, ...]] = {}  # noqa: RUF012
    # Dev and test text kept as the corpus has it: decoding and evaluation
    # score raw sentences, as t2t-bleu does later.
    keep_text = True
    kept_text_reverses = True

    def __init__(
        self, was_reversed: bool = False, data_source: str = AUTO, tfds_data_dir: str | None = None
    ) -> None:
        super().__init__(was_reversed)
        self._chosen: str | None = None
        self.use_source(data_source, tfds_data_dir)

    def use_source(self, data_source: str, tfds_data_dir: str | None = None) -> None:
        """Generate from data_source ("auto" or one of SOURCES), TFDS's data in tfds_data_dir."""
        if data_source not in (AUTO, *SOURCES):
            raise UserError(
                f"data source {data_source!r} is not one of {', '.join((AUTO, *SOURCES))}."
            )
        self.data_source = data_source
        self.tfds_data_dir = tfds_data_dir

    # Choosing the source.

    def sources(self) -> tuple[str, ...]:
        """The sources this problem has, in the order "auto" tries them."""
        have = {
            LOCAL: self.local_files is not None,
            ARCHIVES: bool(self.corpora),
            TFDS: self.tfds_dataset is not None,
        }
        return tuple(source for source in (LOCAL, ARCHIVES, TFDS) if have[source])

    def choose_source(self, data_dir: str, tmp_dir: str) -> str:
        """The source to generate from, checked against what data_dir was built from.

        Raises:
          UserError: a source this problem lacks, or one other than the source
            data_dir's vocabulary and shards were built from.
        """
        recorded = self.recorded_source(data_dir)
        if self.data_source != AUTO:
            chosen = self.data_source
            if chosen not in self.sources():
                raise UserError(
                    f"Problem {self.data_name!r} has no {chosen!r} source; it reads "
                    f"{', '.join(self.sources())}."
                )
            if recorded and recorded != chosen:
                raise UserError(
                    f"data_dir {data_dir} holds the vocabulary or shards of problem "
                    f"{self.data_name!r} built from the {recorded!r} source "
                    f"({self._source_path(data_dir)}); shards of two sources are never mixed. "
                    f"Generate from {chosen!r} into another --data_dir, or pass "
                    f"--data_source={recorded} (or auto) to complete this one."
                )
        elif recorded:
            chosen = recorded
        else:
            chosen = self._detected(tmp_dir)
        return chosen

    def _detected(self, tmp_dir: str) -> str:
        if self.local_files is not None and self.local_files.has(tmp_dir, "train"):
            return LOCAL
        archives = {parallel.archive_name for split in self.corpora.values() for parallel in split}
        if any(os.path.isfile(os.path.join(tmp_dir, name)) for name in archives):
            return ARCHIVES
        return TFDS if self.tfds_dataset is not None else self.sources()[-1]

    def recorded_source(self, data_dir: str) -> str | None:
        """The source data_dir's data of this problem was built from; None if it holds none.

        A record left without data (by a run that failed before writing any)
        counts for nothing. Shards written before sources were recorded came
        from the archives.
        """
        path = self._source_path(data_dir)
        shards = self._has_shards(data_dir)
        if not os.path.isfile(path):
            return ARCHIVES if shards else None
        if not (shards or any(map(os.path.exists, self.vocab_paths(data_dir).values()))):
            return None
        try:
            with open(path, encoding="utf-8") as file:
                source = json.load(file)["source"]
        except (ValueError, KeyError, TypeError, OSError) as error:
            source = error
        if source not in SOURCES:
            raise UserError(
                f"{path} cannot be read ({source}); t2t-datagen writes it to record which "
                "source built the shards beside it. Delete it together with those shards "
                "and the vocabulary to generate them anew."
            )
        return str(source)

    def _has_shards(self, data_dir: str) -> bool:
        return any(
            os.path.exists(path)
            for split, count in self.dataset_splits.items()
            for path in records.shard_paths(data_dir, self.data_name, split, count)
        )

    def _source_path(self, data_dir: str) -> str:
        return os.path.join(data_dir, f"{self.data_name}-source.json")

    # Generating.

    def generate_data(self, data_dir: str, tmp_dir: str) -> None:
        """As Text2TextProblem's, from the chosen source, which is recorded first."""
        self._chosen = self.choose_source(data_dir, tmp_dir)
        if self._chosen == LOCAL and self.local_files is not None:
            self.local_files.check(tmp_dir, "dev")  # Before hours of train shards.
        record = {"source": self._chosen, "from": self._origin(tmp_dir)}
        print(f"{self.data_name}: reading the {record['source']} source ({record['from']}).")
        if self.recorded_source(data_dir) is None:
            write_atomically(
                (json.dumps(record, indent=2) + "\n").encode("utf-8"), self._source_path(data_dir)
            )
        try:
            super().generate_data(data_dir, tmp_dir)
        finally:
            self._chosen = None
        self._write_test_copies(data_dir)

    def _origin(self, tmp_dir: str) -> str:
        if self._chosen == TFDS and self.tfds_dataset is not None:
            where = self.tfds_data_dir or "TFDS's default data dir"
            return f"tensorflow-datasets {self.tfds_dataset.name} in {where}"
        return os.path.abspath(tmp_dir)

    def split_available(self, tmp_dir: str, split: str) -> bool:
        """Locally, newstest2014 (the test split) is optional; every other split is needed."""
        if self._source(tmp_dir) != LOCAL or split == "train" or split == "dev":
            return True
        assert self.local_files is not None
        return self.local_files.has(tmp_dir, split)

    def _source(self, tmp_dir: str) -> str:
        """The source of this generation, or the one "auto" finds in tmp_dir."""
        if self._chosen is not None:
            return self._chosen
        return self.data_source if self.data_source != AUTO else self._detected(tmp_dir)

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        for inputs, targets in self._pairs(tmp_dir, split):
            yield {"inputs": inputs, "targets": targets}

    def _pairs(self, tmp_dir: str, split: str) -> Iterator[tuple[str, str]]:
        source = self._source(tmp_dir)
        if source == LOCAL and self.local_files is not None:
            yield from self.local_files.pairs(tmp_dir, split)
        elif source == TFDS and self.tfds_dataset is not None:
            yield from self.tfds_dataset.pairs(self.tfds_data_dir, split)
        else:
            for parallel in self.corpora[split]:
                yield from parallel.pairs(tmp_dir)

    def _write_test_copies(self, data_dir: str) -> None:
        """The test split's text as `<stem>.<language>` files in data_dir, for scoring."""
        if self.local_files is None or not records.has_text(data_dir, self.data_name, "test"):
            return
        kept = records.text_paths(data_dir, self.data_name, "test")
        stem = self.local_files.stems["test"]
        for path, language in zip(kept, self.local_files.languages, strict=True):
            text = _read(path)
            copy = os.path.join(data_dir, f"{stem}.{language}")
            if not os.path.exists(copy):
                write_atomically(text, copy)
            elif _read(copy) != text:
                logging.warning(
                    "%s differs from the test text of %s (%s), so it is left as it is: "
                    "another problem's test set shares its name in this data_dir.",
                    copy,
                    self.data_name,
                    path,
                )


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()
