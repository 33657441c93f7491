"""WMT 2014 English-German and English-French, the paper's translation tasks.

t2t-datagen downloads the WMT archives into --tmp_dir (a file already there is
used as it is, so a machine without network can be given the archives by
hand), extracts the corpora it needs and streams them: memory stays bounded
however large the corpus. Dev is newstest2013, test newstest2014, as in the
paper. `<name>_rev` gives German->English and French->English from the same data.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Iterator

from t2t_keras import registry
from t2t_keras.data import corpus
from t2t_keras.data.text_problem import Sample, Text2TextProblem
from t2t_keras.errors import UserError

_STATMT = "http://www.statmt.org"


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

    def pairs(self, tmp_dir: str) -> Iterator[tuple[str, str]]:
        """Downloads and extracts what is missing, then streams (source, target) pairs."""
        archive = corpus.maybe_download(tmp_dir, os.path.basename(self.url), self.url)
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


def _wmt_corpora(pair: str) -> dict[str, tuple[ParallelCorpus, ...]]:
    """The WMT14 training, dev and test corpora of "de" (En-De) or "fr" (En-Fr)."""
    other = pair

    def from_archive(url: str, pattern: str) -> ParallelCorpus:
        return ParallelCorpus(url, pattern.format(lang="en"), pattern.format(lang=other))

    train = [
        from_archive(
            f"{_STATMT}/wmt13/training-parallel-europarl-v7.tgz",
            f"training/europarl-v7.{other}-en.{{lang}}",
        ),
        from_archive(
            f"{_STATMT}/wmt13/training-parallel-commoncrawl.tgz", f"commoncrawl.{other}-en.{{lang}}"
        ),
        from_archive(
            f"{_STATMT}/wmt14/training-parallel-nc-v9.tgz",
            f"training/news-commentary-v9.{other}-en.{{lang}}",
        ),
    ]
    if pair == "fr":
        train += [
            from_archive(f"{_STATMT}/wmt13/training-parallel-un.tgz", "un/undoc.2000.fr-en.{lang}"),
            from_archive(
                f"{_STATMT}/wmt10/training-giga-fren.tar", "giga-fren.release2.fixed.{lang}.gz"
            ),
        ]
    test = f"test-full/newstest2014-{other}en-{{kind}}.{{lang}}.sgm"
    return {
        "train": tuple(train),
        "dev": (from_archive(f"{_STATMT}/wmt14/dev.tgz", "dev/newstest2013.{lang}"),),
        "test": (
            ParallelCorpus(
                f"{_STATMT}/wmt14/test-full.tgz",
                test.format(kind="src", lang="en"),
                test.format(kind="ref", lang=other),
                sgm=True,
            ),
        ),
    }


class TranslateWmt14(Text2TextProblem):
    """English to another language from WMT14 archives; subclasses name the corpora."""

    corpora: dict[str, tuple[ParallelCorpus, ...]] = {}  # noqa: RUF012
    dataset_splits = {"train": 100, "dev": 1, "test": 1}  # noqa: RUF012

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        for parallel in self.corpora[split]:
            for inputs, targets in parallel.pairs(tmp_dir):
                yield {"inputs": inputs, "targets": targets}

    def vocab_samples(self, data_dir: str, tmp_dir: str) -> Iterator[Sample]:
        """Training pairs taken in turn from each corpus, so every corpus shapes the vocabulary."""
        streams = [parallel.pairs(tmp_dir) for parallel in self.corpora["train"]]
        for pairs in itertools.zip_longest(*streams):
            for pair in pairs:
                if pair is not None:
                    yield {"inputs": pair[0], "targets": pair[1]}


@registry.register_problem
class TranslateEndeWmtBpe37k(TranslateWmt14):
    """WMT14 English->German, 4.5M pairs, a shared 37k BPE vocabulary (the paper's)."""

    approx_vocab_size = 37_000
    vocab_type = "bpe"
    corpora = _wmt_corpora("de")


@registry.register_problem
class TranslateEnfrWmt32k(TranslateWmt14):
    """WMT14 English->French, 36M pairs, a shared 32k word-piece vocabulary (the paper's)."""

    approx_vocab_size = 32_000
    # SentencePiece's unigram model stands in for the paper's word-pieces.
    vocab_type = "unigram"
    corpora = _wmt_corpora("fr")
    dataset_splits = {"train": 400, "dev": 1, "test": 1}  # noqa: RUF012
