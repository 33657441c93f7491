"""WMT 2014 English-German and English-French, the paper's translation tasks.

Each reads its corpus from one of three sources (`TranslateProblem`): plain
text in --tmp_dir (train.en and train.de or .fr, newstest2013.*,
newstest2014.*), tensorflow-datasets' wmt14_translate, or the WMT archives,
downloaded into --tmp_dir (a file already there is used as it is). Dev is
newstest2013, test newstest2014, as in the paper. `<name>_rev` gives
German->English and French->English from the same data.
"""

from __future__ import annotations

from t2t_keras import registry
from t2t_keras.data.parallel_sources import LocalFiles, ParallelCorpus, TfdsTranslation
from t2t_keras.data.translate_problem import TranslateProblem

_STATMT = "http://www.statmt.org"


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


def _local_files(pair: str) -> LocalFiles:
    stems = {"train": "train", "dev": "newstest2013", "test": "newstest2014"}
    return LocalFiles(("en", pair), stems)


def _tfds_dataset(pair: str) -> TfdsTranslation:
    local = _local_files(pair)
    return TfdsTranslation(
        f"wmt14_translate/{pair}-en",
        ("en", pair),
        {"train": "train", "dev": "validation", "test": "test"},
        help=(
            "Without network, put the corpus in --tmp_dir as plain text instead: "
            f"{local.names()}, one sentence a line, aligned line by line (WMT14's "
            "training corpora, concatenated: the vocabulary is drawn evenly from all of it; "
            "newstest2013 as dev, newstest2014 as test); "
            "t2t-datagen reads them when train.* is there. Or put the WMT archives "
            "there and pass --data_source=archives, or copy a prepared "
            "wmt14_translate into --tfds_data_dir."
        ),
        download_url=f"{_STATMT}/wmt14/dev.tgz",
    )


class TranslateWmt14(TranslateProblem):
    """English to another language from WMT14; subclasses name the language."""

    dataset_splits = {"train": 100, "dev": 1, "test": 1}  # noqa: RUF012


@registry.register_problem
class TranslateEndeWmtBpe37k(TranslateWmt14):
    """WMT14 English->German, 4.5M pairs, a shared 37k BPE vocabulary (the paper's)."""

    approx_vocab_size = 37_000
    vocab_type = "bpe"
    corpora = _wmt_corpora("de")
    local_files = _local_files("de")
    tfds_dataset = _tfds_dataset("de")


@registry.register_problem
class TranslateEnfrWmt32k(TranslateWmt14):
    """WMT14 English->French, 36M pairs, a shared 32k word-piece vocabulary (the paper's)."""

    approx_vocab_size = 32_000
    # SentencePiece's unigram model stands in for the paper's word-pieces.
    vocab_type = "unigram"
    corpora = _wmt_corpora("fr")
    local_files = _local_files("fr")
    tfds_dataset = _tfds_dataset("fr")
    dataset_splits = {"train": 400, "dev": 1, "test": 1}  # noqa: RUF012


@registry.register_problem
class TranslateEndeWmt32k(TranslateEndeWmtBpe37k):
    """tensor2tensor's name: WMT14 English->German with a shared 32k word-piece vocabulary."""

    approx_vocab_size = 32_000
    vocab_type = "unigram"


@registry.register_problem
class TranslateEndeWmt8k(TranslateEndeWmtBpe37k):
    """WMT14 English->German with a shared 8k vocabulary: smaller models, for CPU work."""

    approx_vocab_size = 8_000
    vocab_type = "unigram"
